#include "runtime/tensor/cuda/cuda_allocator.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/cuda/cuda_runtime.hpp"

namespace distlab::cuda {
namespace {

constexpr size_t kRound = 512;

struct Block {
  void* ptr = nullptr;
  size_t size = 0;
  cudaStream_t stream = nullptr;
};

struct DevicePool {
  std::multimap<size_t, Block> cached;       // free blocks by size
  std::unordered_map<void*, Block> live;     // handed out
  AllocatorStats stats;
};

class CachingAllocator final : public Allocator {
 public:
  Allocation allocate(size_t nbytes, Device device) override {
    const size_t size = std::max(kRound, (nbytes + kRound - 1) / kRound * kRound);
    const cudaStream_t stream = currentStream(device.index).handle();
    std::lock_guard<std::mutex> lock(mutex_);
    DevicePool& pool = pools_[device.index];
    Block block = takeCached(pool, size, stream);
    if (block.ptr == nullptr) block = mallocBlock(pool, device.index, size, nbytes, stream);
    pool.live.emplace(block.ptr, block);
    pool.stats.allocatedBytes += static_cast<int64_t>(block.size);
    pool.stats.peakAllocatedBytes =
        std::max(pool.stats.peakAllocatedBytes, pool.stats.allocatedBytes);
    ++pool.stats.numAllocations;
    const int index = device.index;
    return Allocation{block.ptr, [this, index](void* p) { release(index, p); }};
  }

  AllocatorStats stats(Device device) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = pools_.find(device.index);
    return it == pools_.end() ? AllocatorStats{} : it->second.stats;
  }

  void resetPeakStats(Device device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    AllocatorStats& s = pools_[device.index].stats;
    s.peakAllocatedBytes = s.allocatedBytes;
    s.peakReservedBytes = s.reservedBytes;
  }

  void emptyCache() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [device, pool] : pools_) freeCached(device, pool);
  }

 private:
  static Block takeCached(DevicePool& pool, size_t size, cudaStream_t stream) {
    for (auto it = pool.cached.lower_bound(size);
         it != pool.cached.end() && it->first <= 2 * size; ++it) {
      if (it->second.stream == stream) {
        Block b = it->second;
        pool.cached.erase(it);
        return b;
      }
    }
    return Block{};
  }

  Block mallocBlock(DevicePool& pool, int device, size_t size, size_t requested,
                    cudaStream_t stream) {
    setDevice(device);
    void* ptr = nullptr;
    cudaError_t err = cudaMalloc(&ptr, size);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      freeCached(device, pool);
      err = cudaMalloc(&ptr, size);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw Error("CUDA out of memory: tried to allocate " + std::to_string(requested) +
                  " bytes on cuda:" + std::to_string(device) + " (" +
                  std::to_string(pool.stats.allocatedBytes) + " bytes allocated, " +
                  std::to_string(pool.stats.reservedBytes) + " reserved): " +
                  cudaGetErrorString(err));
    }
    pool.stats.reservedBytes += static_cast<int64_t>(size);
    pool.stats.peakReservedBytes = std::max(pool.stats.peakReservedBytes, pool.stats.reservedBytes);
    ++pool.stats.numDeviceMallocs;
    return Block{ptr, size, stream};
  }

  static void freeCached(int device, DevicePool& pool) {
    if (pool.cached.empty()) return;
    cudaSetDevice(device);
    cudaDeviceSynchronize();
    for (auto& [size, block] : pool.cached) {
      cudaFree(block.ptr);
      pool.stats.reservedBytes -= static_cast<int64_t>(size);
    }
    pool.cached.clear();
  }

  void release(int device, void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    DevicePool& pool = pools_[device];
    const auto it = pool.live.find(ptr);
    if (it == pool.live.end()) return;
    pool.stats.allocatedBytes -= static_cast<int64_t>(it->second.size);
    pool.cached.emplace(it->second.size, it->second);
    pool.live.erase(it);
  }

  mutable std::mutex mutex_;
  std::unordered_map<int, DevicePool> pools_;  // GUARDED_BY(mutex_)
};

}  // namespace

Allocator& cachingAllocator() {
  static CachingAllocator allocator;
  return allocator;
}

AllocatorStats memoryStats(int device) { return cachingAllocator().stats(Device::cuda(device)); }
void resetPeakMemoryStats(int device) { cachingAllocator().resetPeakStats(Device::cuda(device)); }
void emptyCache() { cachingAllocator().emptyCache(); }

Tensor pinnedEmpty(const Shape& shape, DType dtype) {
  if (!isAvailable()) throw Error("pinnedEmpty: " + unavailableReason());
  const size_t nbytes = static_cast<size_t>(shapeNumel(shape)) * elementSize(dtype);
  void* ptr = nullptr;
  check(cudaHostAlloc(&ptr, std::max<size_t>(nbytes, 1), cudaHostAllocDefault), "cudaHostAlloc",
        0);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::wrap(ptr, nbytes, Device::cpu(), [](void* p) { cudaFreeHost(p); });
  impl->sizes = shape;
  impl->strides = Shape(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) {
    impl->strides[d] = impl->strides[d + 1] * std::max<int64_t>(shape[d + 1], 1);
  }
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

}  // namespace distlab::cuda
