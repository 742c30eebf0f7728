#pragma once
// Shared by the .cu files: launch geometry, strided offsets, dtype dispatch.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/cuda/cuda_runtime.hpp"
#include "runtime/tensor/dispatch.hpp"

namespace distlab::cuda::detail {

constexpr int kMaxDims = 8;
constexpr int kMaxOperands = 4;
constexpr int kThreads = 256;

// Sizes of the iteration space and each operand's strides (in elements).
struct Geometry {
  int ndim = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};
};

// Operands share `shape` (broadcast views allowed); throws past kMaxDims.
inline Geometry geometryOf(const char* op, const Shape& shape, const Tensor* const* operands,
                           int count) {
  Geometry g;
  if (shape.size() > static_cast<size_t>(kMaxDims)) {
    throw Error(std::string(op) + " on cuda supports at most 8 dimensions, got " +
                std::to_string(shape.size()));
  }
  g.ndim = static_cast<int>(shape.size());
  g.numel = shapeNumel(shape);
  for (int d = 0; d < g.ndim; ++d) g.sizes[d] = shape[d];
  for (int k = 0; k < count; ++k) {
    for (int d = 0; d < g.ndim; ++d) g.strides[k][d] = operands[k]->strides()[d];
  }
  return g;
}

__device__ inline int64_t offsetOf(const Geometry& g, int k, int64_t linear) {
  int64_t off = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    const int64_t i = linear % g.sizes[d];
    linear /= g.sizes[d];
    off += i * g.strides[k][d];
  }
  return off;
}

inline unsigned blocksFor(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 ? (b < 1 ? 1 : b) : 65535);
}

inline cudaStream_t streamOf(const Tensor& t) { return currentStream(t.device().index).handle(); }

inline void checkLaunch(const char* op, const Tensor& t) {
  check(cudaGetLastError(), op, t.device().index);
}

[[noreturn]] inline void unsupportedDtype(const char* op, const Tensor& t) {
  throw Error(std::string(op) + " is not implemented for device " + t.device().str() +
              " with dtype " + std::string(dtypeName(t.dtype())));
}

// The dtypes dispatchCuda below has typed kernels for.
inline bool hasTypedKernels(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kInt64 ||
         dtype == DType::kInt32 || dtype == DType::kBool;
}

// Calls fn(T{}) for the element types the CUDA kernels support.
template <typename Fn>
void dispatchCuda(const char* op, const Tensor& t, Fn&& fn) {
  switch (t.dtype()) {
    case DType::kFloat32: fn(float{}); return;
    case DType::kFloat64: fn(double{}); return;
    case DType::kInt64: fn(int64_t{}); return;
    case DType::kInt32: fn(int32_t{}); return;
    case DType::kBool: fn(bool{}); return;
    default: unsupportedDtype(op, t);
  }
}

}  // namespace distlab::cuda::detail
