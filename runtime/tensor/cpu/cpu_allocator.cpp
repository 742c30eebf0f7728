// The CPU allocator: 64-byte aligned host memory from the C library.
#include <malloc.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/allocator.hpp"
#include "runtime/tensor/detail/device_registration.hpp"

namespace distlab::detail {
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

void freeHost(void* p) { std::free(p); }

class CpuAllocator final : public Allocator {
 public:
  Allocation allocate(size_t nbytes, Device device) override {
    keepFreedMemoryInHeap();
    // aligned_alloc needs a multiple of the alignment; never allocate 0 bytes
    // so data() is a valid pointer even for empty tensors.
    const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    void* data = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
    if (data == nullptr) {
      throw Error("Storage::allocate: out of memory allocating " + std::to_string(nbytes) +
                  " bytes on " + device.str());
    }
    return Allocation{data, &freeHost};
  }
};

}  // namespace

void registerCpuDevice() {
  static CpuAllocator allocator;
  registerAllocator(DeviceType::kCPU, &allocator);
}

}  // namespace distlab::detail
