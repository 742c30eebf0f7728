#include "runtime/tensor/storage.hpp"

#include <string>
#include <utility>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/allocator.hpp"

namespace distlab {
std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  Allocation block = allocatorFor(device).allocate(nbytes, device);
  auto storage = std::shared_ptr<Storage>(
      new Storage(block.data, nbytes, device, std::move(block.deleter)));
  storage->owned_ = true;
  return storage;
}

void Storage::release() {
  if (!owned_) {
    throw Error("Storage::release: this storage wraps memory it does not own (" +
                std::to_string(nbytes_) + " bytes on " + device_.str() + ")");
  }
  if (released_) throw Error("Storage::release: the storage is already released");
  if (deleter_) deleter_(data_);
  data_ = nullptr;
  nbytes_ = 0;
  released_ = true;
}

void Storage::reallocate(size_t nbytes) {
  if (!owned_ || !released_) {
    throw Error("Storage::reallocate(" + std::to_string(nbytes) + "): only a released storage " +
                "from Storage::allocate can be reallocated (this one holds " +
                std::to_string(nbytes_) + " bytes)");
  }
  // The device's allocator again (Note [Device dispatch]): the same
  // alignment and statistics as the first allocation.
  Allocation block = allocatorFor(device_).allocate(nbytes, device_);
  data_ = block.data;
  deleter_ = std::move(block.deleter);
  nbytes_ = nbytes;
  released_ = false;
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> deleter) {
  return std::shared_ptr<Storage>(new Storage(data, nbytes, device, std::move(deleter)));
}

Storage::Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (deleter_ && !released_) deleter_(data_);
}

}  // namespace distlab
