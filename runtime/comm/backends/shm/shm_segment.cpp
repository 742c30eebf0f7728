#include "runtime/comm/backends/shm/shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "runtime/comm/backends/shm/shm_wait.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm::shm {
namespace {

uint64_t alignUp(uint64_t v) { return (v + 63) & ~uint64_t{63}; }

std::string freshName() {
  std::random_device rd;
  return fmt::format("/distlab_shm_{}_{:08x}{:08x}", getpid(), rd(), rd());
}

[[noreturn]] void throwErrno(const std::string& what) {
  throw DistBackendError(fmt::format("shm: {}: {}", what, std::strerror(errno)));
}

}  // namespace

uint64_t ShmSegment::totalBytes(int size, const SegmentOptions& o) {
  const uint64_t n = static_cast<uint64_t>(size);
  return alignUp(sizeof(SegmentHeader)) + n * sizeof(RankControl) + n * 2 * sizeof(OpDesc) +
         alignUp(n * 2 * countsPerRank(size) * sizeof(uint64_t)) +
         (laysOutEagerEntries(size)
              ? n * (kEagerEntries * sizeof(EagerEntry) + sizeof(EagerReadMarks))
              : 0) +
         n * 2 * o.slotBytes +
         n * n * (sizeof(ChannelHeader) + o.channelBytes);
}

void ShmSegment::layout(uint8_t* base, int size, const SegmentOptions& o) {
  base_ = base;
  size_ = size;
  uint8_t* p = base;
  header_ = reinterpret_cast<SegmentHeader*>(p);
  p += alignUp(sizeof(SegmentHeader));
  controls_ = reinterpret_cast<RankControl*>(p);
  p += size * sizeof(RankControl);
  descs_ = reinterpret_cast<OpDesc*>(p);
  p += size * 2 * sizeof(OpDesc);
  const uint64_t n = static_cast<uint64_t>(size);
  counts_ = reinterpret_cast<uint64_t*>(p);
  p += alignUp(n * 2 * countsPerRank(size) * sizeof(uint64_t));
  if (laysOutEagerEntries(size)) {
    eager_ = reinterpret_cast<EagerEntry*>(p);
    p += n * kEagerEntries * sizeof(EagerEntry);
    eagerMarks_ = reinterpret_cast<EagerReadMarks*>(p);
    p += n * sizeof(EagerReadMarks);
  }
  slots_ = p;
  p += n * 2 * o.slotBytes;
  channelHeaders_ = reinterpret_cast<ChannelHeader*>(p);
  p += n * n * sizeof(ChannelHeader);
  rings_ = p;
}

bool ShmSegment::laysOutEagerEntries(int size) { return size <= kEagerMaxRanks; }

ChannelHeader& ShmSegment::channel(int src, int dst) {
  return channelHeaders_[uint64_t(dst) * size_ + src];
}

const ChannelHeader& ShmSegment::channel(int src, int dst) const {
  return channelHeaders_[uint64_t(dst) * size_ + src];
}

uint8_t* ShmSegment::channelData(int src, int dst) {
  return rings_ + (uint64_t(src) * size_ + dst) * header_->channelBytes;
}

std::unique_ptr<ShmSegment> ShmSegment::open(Store& store, const std::string& keyPrefix, int rank,
                                             int size, const SegmentOptions& options,
                                             std::chrono::milliseconds timeout) {
  if (size < 1 || size > kMaxWorldSize) {
    throw ValueError(fmt::format("shm: world size {} is out of range (1..{}): a segment holds at "
                                 "most {} ranks; use the gloo backend for a larger group",
                                 size, kMaxWorldSize, kMaxWorldSize));
  }
  if (options.slotBytes % 4096 != 0 || options.channelBytes < 4096 ||
      (options.channelBytes & (options.channelBytes - 1)) != 0) {
    throw ValueError("shm: slot bytes must be a multiple of 4096 and channel bytes a power of two "
                     ">= 4096");
  }
  if (options.slotBytes < 64 * static_cast<uint64_t>(size)) {
    // Algorithms split a slot in one 64-byte-aligned part per rank.
    throw ValueError(fmt::format("shm: slot bytes {} leave no 64-byte part per rank at world size "
                                 "{}: use at least {}", options.slotBytes, size, 64 * size));
  }
  std::unique_ptr<ShmSegment> seg(new ShmSegment());
  seg->rank_ = rank;
  const std::string key = keyPrefix + "segment";
  const uint64_t total = totalBytes(size, options);
  int fd = -1;
  if (rank == 0) {
    seg->name_ = freshName();
    fd = shm_open(seg->name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) throwErrno("shm_open(" + seg->name_ + ")");
    seg->linked_ = true;
    if (ftruncate(fd, static_cast<off_t>(total)) != 0) {
      close(fd);
      shm_unlink(seg->name_.c_str());
      throwErrno(fmt::format("ftruncate({} bytes)", total));
    }
  } else {
    store.wait({key}, timeout);
    seg->name_ = store.getString(key);
    fd = shm_open(seg->name_.c_str(), O_RDWR, 0600);
    if (fd < 0) throwErrno("shm_open(" + seg->name_ + ") on rank " + std::to_string(rank));
    seg->linked_ = true;  // any rank unlinks on failure (Note [shm segment lifecycle])
  }
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(seg->name_.c_str());
    throwErrno(fmt::format("mmap({} bytes)", total));
  }
  seg->mapped_ = total;
  seg->layout(static_cast<uint8_t*>(p), size, options);
  if (rank == 0) {
    // ftruncate zero-fills: atomics start at 0. Fill in the header, then publish.
    seg->header_->worldSize = size;
    seg->header_->slotBytes = options.slotBytes;
    seg->header_->channelBytes = options.channelBytes;
    seg->header_->totalBytes = total;
    std::atomic_thread_fence(std::memory_order_release);
    reinterpret_cast<std::atomic<uint64_t>*>(&seg->header_->magic)
        ->store(kSegmentMagic, std::memory_order_release);
    store.setString(key, seg->name_);
  } else {
    auto* magic = reinterpret_cast<std::atomic<uint64_t>*>(&seg->header_->magic);
    if (magic->load(std::memory_order_acquire) != kSegmentMagic ||
        seg->header_->worldSize != size || seg->header_->totalBytes != total) {
      throw DistBackendError(fmt::format(
          "shm: segment {} does not match this rank's configuration (world size {} vs {}, "
          "{} vs {} bytes)",
          seg->name_, seg->header_->worldSize, size, seg->header_->totalBytes, total));
    }
  }
  RankControl& me = seg->control(rank);
  me.pid.store(getpid(), std::memory_order_relaxed);
  me.base.store(reinterpret_cast<uintptr_t>(seg->base_), std::memory_order_relaxed);
  me.attached.store(1, std::memory_order_release);
  // Wait for everyone (bounded), then rank 0 unlinks (Note [shm segment lifecycle]).
  // The last rank to attach wakes the others: a thousand ranks attaching on
  // two cores must not spend the cores looking at each other.
  std::atomic<uint32_t>& attachedRanks = seg->header_->attachedRanks;
  if (attachedRanks.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(size)) {
    futexWakeAll(&attachedRanks);
  }
  const Deadline deadline = Deadline::after(timeout);
  for (;;) {
    const uint32_t seen = attachedRanks.load(std::memory_order_acquire);
    if (seen == static_cast<uint32_t>(size)) break;
    if (deadline.expired()) {
      std::string missing;
      for (int r = 0; r < size; ++r) {
        if (!seg->control(r).attached.load(std::memory_order_acquire)) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      throw DistTimeoutError(fmt::format("shm: ranks [{}] did not attach to segment {} within {} ms",
                                         missing, seg->name_, timeout.count()));
    }
    const int64_t remainingNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
        deadline.remaining()).count();
    futexWait(&attachedRanks, seen, std::clamp<int64_t>(remainingNs, 1, 100'000'000));
  }
  shm_unlink(seg->name_.c_str());  // every rank: the first one to get here wins
  seg->linked_ = false;
  return seg;
}

ShmSegment::~ShmSegment() {
  if (linked_) shm_unlink(name_.c_str());
  if (base_) munmap(base_, mapped_);
}

}  // namespace distlab::comm::shm
