#include "runtime/comm/backends/gloo/gloo_dtype.hpp"

#include <cstring>

#include "runtime/comm/reduce_kernels.hpp"

namespace distlab::comm::gloo_backend {

bool isHalf(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

std::function<void(void*, const void*, const void*, size_t)> reduceFunction(DType dtype,
                                                                            ReduceOp op) {
  return [dtype, op](void* out, const void* a, const void* b, size_t n) {
    // Every ReduceOp is commutative, so out == b can fold a into it.
    if (out == b) {
      reduceInto(out, a, n, dtype, op);
      return;
    }
    if (out != a) std::memcpy(out, a, n * elementSize(dtype));
    reduceInto(out, b, n, dtype, op);
  };
}

std::vector<float> widen(const void* src, size_t count, DType dtype) {
  std::vector<float> out(count);
  if (dtype == DType::kFloat16) {
    const auto* h = static_cast<const Half*>(src);
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(h[i]);
  } else {
    const auto* h = static_cast<const BFloat16*>(src);
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(h[i]);
  }
  return out;
}

void narrow(const float* src, size_t count, void* dst, DType dtype) {
  if (dtype == DType::kFloat16) {
    auto* h = static_cast<Half*>(dst);
    for (size_t i = 0; i < count; ++i) h[i] = Half(src[i]);
  } else {
    auto* h = static_cast<BFloat16*>(dst);
    for (size_t i = 0; i < count; ++i) h[i] = BFloat16(src[i]);
  }
}

}  // namespace distlab::comm::gloo_backend
