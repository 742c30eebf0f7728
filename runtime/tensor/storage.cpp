#include "runtime/tensor/storage.hpp"

#include <malloc.h>

#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include "runtime/core/errors.hpp"

namespace distlab {
namespace {
constexpr size_t kAlignment = 64;

// Note [Keeping freed tensor memory]
// glibc serves blocks above M_MMAP_THRESHOLD (128 KiB by default, adapting
// upwards only after a free) with mmap and returns them to the kernel on free,
// and trims the heap top above M_TRIM_THRESHOLD. A training step frees and
// reallocates the same multi-MiB gradients every iteration (zero_grad drops
// them), so each backward page-faulted ~16 MiB back in: 3-5 ms of an ~15 ms MLP
// step. Raising both thresholds once keeps that memory in the heap for reuse.
void keepFreedMemoryInHeap() {
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 128 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
  });
}
}  // namespace

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  if (!device.isCpu()) {
    throw Error("Storage::allocate: no allocator for device " + device.str() + " (" +
                std::to_string(nbytes) + " bytes requested); CUDA support is not built yet");
  }
  auto storage = std::shared_ptr<Storage>(
      new Storage(alignedAllocate(nbytes, device), nbytes, device, [](void* p) { std::free(p); }));
  storage->owned_ = true;
  return storage;
}

void Storage::release() {
  if (!owned_) {
    throw Error("Storage::release: this storage wraps memory it does not own (" +
                std::to_string(nbytes_) + " bytes on " + device_.str() + ")");
  }
  if (released_) throw Error("Storage::release: the storage is already released");
  deleter_(data_);
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
  data_ = alignedAllocate(nbytes, device_);
  nbytes_ = nbytes;
  released_ = false;
}

void* Storage::alignedAllocate(size_t nbytes, Device device) {
  keepFreedMemoryInHeap();
  // aligned_alloc needs a multiple of the alignment; never allocate 0 bytes so
  // data() is a valid pointer even for empty tensors.
  const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* data = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (data == nullptr) {
    throw Error("Storage::allocate: out of memory allocating " + std::to_string(nbytes) +
                " bytes on " + device.str());
  }
  return data;
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
