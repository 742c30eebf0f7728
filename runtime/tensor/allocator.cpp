#include "runtime/tensor/allocator.hpp"

#include <array>
#include <atomic>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/dispatch.hpp"

namespace distlab {
namespace {

std::array<std::atomic<Allocator*>, kNumDeviceTypes>& allocators() {
  static std::array<std::atomic<Allocator*>, kNumDeviceTypes> table{};
  return table;
}

}  // namespace

AllocatorStats Allocator::stats(Device) const { return {}; }
void Allocator::resetPeakStats(Device) {}
void Allocator::emptyCache() {}

void registerAllocator(DeviceType type, Allocator* allocator) {
  allocators()[static_cast<size_t>(type)].store(allocator, std::memory_order_release);
}

bool hasAllocator(DeviceType type) {
  detail::ensureBuiltinDevices();
  return allocators()[static_cast<size_t>(type)].load(std::memory_order_acquire) != nullptr;
}

Allocator& allocatorFor(Device device) {
  detail::ensureBuiltinDevices();
  Allocator* a = allocators()[static_cast<size_t>(device.type)].load(std::memory_order_acquire);
  if (a == nullptr) {
    throw Error("no allocator for device " + device.str() +
                ": distlab was built without CUDA (configure with CUDA installed under "
                "/usr/local/cuda or -DCUDAToolkit_ROOT=<dir>)");
  }
  return *a;
}

}  // namespace distlab
