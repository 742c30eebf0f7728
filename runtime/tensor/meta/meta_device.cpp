// The meta device: tensors with sizes, strides and dtype but no memory.
// Its allocator hands out no memory and its fallback kernel does nothing, so
// every operation computes only its result's shape and dtype (Note [Device
// dispatch]). Reading values (item, toVector, printing values, copying to
// another device) throws; toEmpty(device) plus initialisation materialises.
#include "runtime/tensor/allocator.hpp"
#include "runtime/tensor/detail/device_registration.hpp"
#include "runtime/tensor/dispatch.hpp"

namespace distlab::detail {
namespace {

class MetaAllocator final : public Allocator {
 public:
  Allocation allocate(size_t, Device) override { return Allocation{}; }
};

void shapeOnly(const KernelArgs&) {}

}  // namespace

void registerMetaDevice() {
  static MetaAllocator allocator;
  registerAllocator(DeviceType::kMeta, &allocator);
  registerFallback(DeviceType::kMeta, &shapeOnly);
}

}  // namespace distlab::detail
