#pragma once
// Allocators per device type (Note [Device dispatch] in dispatch.hpp).
//
// Storage::allocate asks the allocator registered for the device's type. CPU
// and meta allocators are always registered; CUDA's caching allocator is
// registered when distlab is built with CUDA. A device type without an
// allocator throws an Error naming the device and the fix.
//
// Thread-safety: registration happens once, at the first lookup (built-in
// devices) or before any tensor of that type exists (registerAllocator);
// allocate() and stats() are safe from any thread.
#include <cstddef>
#include <cstdint>
#include <functional>

#include "runtime/tensor/device.hpp"

namespace distlab {

// Byte counts of one device's allocator (PyTorch: torch.cuda.memory_stats):
// allocated = bytes in live tensors, reserved = bytes held from the driver
// (allocated plus cached free blocks), peaks since the last resetPeakStats().
struct AllocatorStats {
  int64_t allocatedBytes = 0;
  int64_t reservedBytes = 0;
  int64_t peakAllocatedBytes = 0;
  int64_t peakReservedBytes = 0;
  int64_t numAllocations = 0;  // allocate() calls
  int64_t numDeviceMallocs = 0;  // calls into the driver (cache misses)
};

// A block of memory and how to give it back. `data` is null only for meta.
struct Allocation {
  void* data = nullptr;
  std::function<void(void*)> deleter;  // may be empty (nothing to free)
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // `nbytes` on `device`, uninitialised. Throws Error naming the size and the
  // device when the memory cannot be had.
  virtual Allocation allocate(size_t nbytes, Device device) = 0;
  // Statistics of `device`; allocators that keep none return zeros.
  virtual AllocatorStats stats(Device device) const;
  virtual void resetPeakStats(Device device);
  // Returns cached free blocks to the driver (no-op where nothing is cached).
  virtual void emptyCache();
};

// Installs `allocator` (which must outlive every tensor) for `type`, replacing
// the built-in one.
void registerAllocator(DeviceType type, Allocator* allocator);
// The allocator for `device`'s type; throws Error ("no allocator for device
// cuda:0: distlab was built without CUDA ...") when none is registered.
Allocator& allocatorFor(Device device);
// True when `type` has an allocator (CUDA: built with CUDA; a device may
// still be absent at run time, see cuda/cuda_runtime.hpp).
bool hasAllocator(DeviceType type);

}  // namespace distlab
