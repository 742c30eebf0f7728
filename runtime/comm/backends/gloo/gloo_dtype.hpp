#pragma once
// DType helpers for the Gloo backend: carrier types for Gloo's typed option
// setters, the type-erased reduce callback, and float16/bfloat16 widening.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/comm/types.hpp"
#include "runtime/tensor/dtype.hpp"

namespace distlab::comm::gloo_backend {

// Calls fn(T{}) with an unsigned integer type of `bytes` bytes (1, 2, 4 or 8):
// Gloo's setters only use sizeof(T); the bits are never interpreted as T.
template <typename Fn>
void withCarrier(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1: fn(uint8_t{}); return;
    case 2: fn(uint16_t{}); return;
    case 4: fn(uint32_t{}); return;
    default: fn(uint64_t{}); return;
  }
}

bool isHalf(DType dtype);  // float16 or bfloat16

// Gloo's reduce callback (out, a, b, n) for `op` on `dtype`, built on
// reduce_kernels.hpp. AVG and PREMUL_SUM reduce as SUM (callers finish them).
std::function<void(void*, const void*, const void*, size_t)> reduceFunction(DType dtype,
                                                                            ReduceOp op);

std::vector<float> widen(const void* src, size_t count, DType dtype);
void narrow(const float* src, size_t count, void* dst, DType dtype);
inline void narrow(const std::vector<float>& src, void* dst, DType dtype) {
  narrow(src.data(), src.size(), dst, dtype);
}

}  // namespace distlab::comm::gloo_backend
