#pragma once
// A reference-counted block of memory on one device. Views of a tensor share
// one Storage (through std::shared_ptr); the memory is freed with the last view.
// Memory is 64-byte aligned so BLAS and vectorised loops get aligned rows.
//
// Storage may also wrap memory it does not own (for example a shared-memory
// segment or a communication buffer) with a caller-supplied deleter.
#include <cstddef>
#include <functional>
#include <memory>

#include "runtime/tensor/device.hpp"

namespace distlab {

class Storage {
 public:
  // Allocates `nbytes` on `device` (uninitialised) with the device's allocator
  // (allocator.hpp). Throws for a device type without an allocator (CUDA in a
  // build without CUDA) and on allocation failure with the size requested.
  // Meta storage has data() == nullptr.
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device);
  // Wraps external memory; `deleter` (may be empty) runs when the storage dies.
  static std::shared_ptr<Storage> wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> deleter);

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // Note [Freeing storage in place]
  // FSDP frees an unsharded parameter's memory after forward while views and
  // autograd nodes keep referring to the tensor, and fills it again before
  // backward (PyTorch: untyped_storage().resize_(0) / resize_(n)). release()
  // frees the memory: nbytes() becomes 0 and data() null, so touching a view
  // of a released storage is the caller's bug (as in PyTorch). reallocate(n)
  // gives a released storage `n` fresh (uninitialised) bytes at a new address;
  // every tensor on this storage sees them. Only storages from allocate() can
  // do this (wrapped memory belongs to someone else: Error); release() on a
  // released storage and reallocate() on a live one are Errors naming the sizes.
  void release();
  void reallocate(size_t nbytes);
  bool isReleased() const { return released_; }

 private:
  Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);

  void* data_;
  size_t nbytes_;
  Device device_;
  std::function<void(void*)> deleter_;
  bool owned_ = false;  // from allocate(): may release()/reallocate()
  bool released_ = false;
};

}  // namespace distlab
