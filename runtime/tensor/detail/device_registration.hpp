#pragma once
// Built-in device registrations, called once by detail::ensureBuiltinDevices()
// (dispatch.cpp). Each installs its allocator and kernels.
#include "distlab/config.hpp"

namespace distlab::detail {
void registerCpuDevice();   // cpu/cpu_allocator.cpp
void registerMetaDevice();  // meta/meta_device.cpp
#if DISTLAB_HAVE_CUDA
void registerCudaDevice();  // cuda/cuda_device.cpp
#endif
}  // namespace distlab::detail
