// Registers the CUDA device: the caching allocator, the kernels, and copy_
// between host and device (Note [Cross-device copies]).
#include <string>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/cuda/cuda_allocator.hpp"
#include "runtime/tensor/cuda/cuda_kernels.hpp"
#include "runtime/tensor/cuda/cuda_runtime.hpp"
#include "runtime/tensor/detail/device_registration.hpp"

namespace distlab::cuda {

void convertOnDevice(const Tensor& dst, const Tensor& src);  // cuda_elementwise.cu

namespace {

// Copies between contiguous buffers of equal size on the current stream of the
// device side, then waits for it: the host buffer may be a temporary.
void memcpyAndWait(void* dst, const void* src, size_t nbytes, cudaMemcpyKind kind, int device) {
  const Stream stream = currentStream(device);
  check(cudaMemcpyAsync(dst, src, nbytes, kind, stream.handle()), "cudaMemcpyAsync", device);
  stream.synchronize();
}

void hostToDevice(const Tensor& dst, const Tensor& src) {
  const Tensor host = src.contiguous();  // already dst's dtype (copy.cpp converts CPU sources)
  Tensor staging = dst.isContiguous() ? dst : empty(dst.sizes(), dst.options());
  memcpyAndWait(staging.rawData(), host.rawData(), host.nbytes(), cudaMemcpyHostToDevice,
                dst.device().index);
  if (!staging.isSame(dst)) convertOnDevice(dst, staging);
}

void deviceToHost(const Tensor& dst, const Tensor& src) {
  Tensor onDevice = src;
  if (src.dtype() != dst.dtype() || !src.isContiguous()) {
    onDevice = empty(src.sizes(), TensorOptions{dst.dtype(), src.device()});
    convertOnDevice(onDevice, src);
  }
  Tensor host = dst.isContiguous() ? dst : empty(dst.sizes(), TensorOptions{dst.dtype()});
  memcpyAndWait(host.rawData(), onDevice.rawData(), onDevice.nbytes(), cudaMemcpyDeviceToHost,
                src.device().index);
  if (!host.isSame(dst)) Tensor(dst).copy_(host);
}

// Outputs {dst}, inputs {src} of dst's shape; at least one side on CUDA.
void copy(const KernelArgs& args) {
  const Tensor& dst = args.outputs[0];
  const Tensor& src = args.inputs[0];
  if (dst.device().isCuda() && src.device().isCpu()) return hostToDevice(dst, src);
  if (dst.device().isCpu() && src.device().isCuda()) return deviceToHost(dst, src);
  if (dst.device() == src.device()) return convertOnDevice(dst, src);
  if (dst.device().isCuda() && src.device().isCuda()) {  // another GPU: via a contiguous copy
    const Tensor packed = src.contiguous();
    Tensor landing = empty(src.sizes(), TensorOptions{src.dtype(), dst.device()});
    check(cudaMemcpyPeerAsync(landing.rawData(), dst.device().index, packed.rawData(),
                              src.device().index, packed.nbytes(),
                              currentStream(dst.device().index).handle()),
          "cudaMemcpyPeerAsync", dst.device().index);
    return convertOnDevice(dst, landing);
  }
  throw Error("copy_ from " + src.device().str() + " to " + dst.device().str() +
              " is not implemented");
}

}  // namespace
}  // namespace distlab::cuda

namespace distlab::detail {

void registerCudaDevice() {
  registerAllocator(DeviceType::kCUDA, &cuda::cachingAllocator());
  registerKernel("copy_", DeviceType::kCUDA, &cuda::copy);
  cuda::registerElementwiseKernels();
  cuda::registerReduceKernels();
  cuda::registerBlasKernels();
}

}  // namespace distlab::detail
