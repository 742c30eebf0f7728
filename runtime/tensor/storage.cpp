#include "runtime/tensor/storage.hpp"

#include <utility>

#include "runtime/tensor/allocator.hpp"

namespace distlab {
std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  Allocation block = allocatorFor(device).allocate(nbytes, device);
  return std::shared_ptr<Storage>(
      new Storage(block.data, nbytes, device, std::move(block.deleter)));
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> deleter) {
  return std::shared_ptr<Storage>(new Storage(data, nbytes, device, std::move(deleter)));
}

Storage::Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (deleter_) deleter_(data_);
}

}  // namespace distlab
