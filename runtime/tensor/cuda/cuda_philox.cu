// The PhiloxGenerator fill on the device (Note [Philox on CPU and GPU]):
// element i computed by the same philox_math.hpp code as the host loop.
// Built with --fmad=false (runtime/tensor/CMakeLists.txt): no contraction
// beyond the explicit fmaf calls.
#include "runtime/tensor/cuda/cuda_common.cuh"
#include "runtime/tensor/cuda/cuda_kernels.hpp"
#include "runtime/tensor/philox_math.hpp"

namespace distlab::cuda {
namespace {

__global__ void philoxKernel(float* out, uint64_t n, uint64_t seed, uint64_t offset,
                             bool normal) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = normal ? philox::normalAt(seed, offset, i) : philox::uniformAt(seed, offset, i);
  }
}

}  // namespace

void philoxFill(float* out, uint64_t n, uint64_t seed, uint64_t offset, bool normal,
                int device) {
  if (n == 0) return;
  setDevice(device);
  const uint64_t blocks = (n + detail::kThreads - 1) / detail::kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
  philoxKernel<<<grid, detail::kThreads, 0, currentStream(device).handle()>>>(out, n, seed,
                                                                             offset, normal);
  check(cudaGetLastError(), "philox fill", device);
}

}  // namespace distlab::cuda
