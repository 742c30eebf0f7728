#pragma once
// CUDA kernels registered for DeviceType::kCUDA (Note [Device dispatch]).
// Element types: float32, float64, int64, int32 and bool (masks, comparisons);
// an operation on another dtype throws "<op> is not implemented for device
// cuda:N with dtype <dtype>". All launches go to the current stream.
#include <cstdint>

#include "runtime/tensor/dispatch.hpp"

namespace distlab::cuda {

// Installs the kernels of cuda_elementwise.cu, cuda_reduce.cu and cuda_blas.cpp.
void registerElementwiseKernels();
void registerReduceKernels();
void registerBlasKernels();

// Fills out[0, n) on `device` (current stream) with PhiloxGenerator values
// (Note [Philox on CPU and GPU], runtime/tensor/philox.hpp): uniform [0, 1)
// or, with `normal`, standard normal float32.
void philoxFill(float* out, uint64_t n, uint64_t seed, uint64_t offset, bool normal, int device);

}  // namespace distlab::cuda
