#pragma once
// The CUDA caching allocator and pinned host memory.
//
// Note [CUDA caching allocator]
// cudaMalloc and cudaFree synchronise the device, so freed blocks are kept in
// a per-device cache and handed out again: a request is rounded up to 512
// bytes and served by the smallest cached block of the same stream that is at
// least as large and at most twice as large; otherwise cudaMalloc is called
// (after emptying the cache once if the device is out of memory). A block is
// reused only on the stream it was allocated for, so work still queued on
// that stream finishes before the memory is overwritten. Statistics follow
// torch.cuda.memory_stats: allocated (live tensors), reserved (allocated plus
// cached), and their peaks since resetPeakStats (FSDP's memory figures).
#include "runtime/tensor/allocator.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::cuda {

// The allocator registered for DeviceType::kCUDA (Storage::allocate uses it).
Allocator& cachingAllocator();
AllocatorStats memoryStats(int device);
void resetPeakMemoryStats(int device);
void emptyCache();

// A contiguous CPU tensor in page-locked (pinned) memory, for asynchronous
// host<->device copies; freed with cudaFreeHost when the last view dies.
Tensor pinnedEmpty(const Shape& shape, DType dtype);

}  // namespace distlab::cuda
