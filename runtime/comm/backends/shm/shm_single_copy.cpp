#include "runtime/comm/backends/shm/shm_single_copy.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm::shm {

int readProcessMemory(pid_t pid, uint64_t remote, void* local, uint64_t bytes) {
  auto* out = static_cast<uint8_t*>(local);
  uint64_t done = 0;
  while (done < bytes) {
    // The kernel may copy less than asked (it stops at a page it cannot
    // read, or at its per-call limit): continue from where it stopped.
    iovec to{out + done, bytes - done};
    iovec from{reinterpret_cast<void*>(remote + done), bytes - done};
    const ssize_t got = process_vm_readv(pid, &to, 1, &from, 1, 0);
    if (got < 0) return errno;
    if (got == 0) return EFAULT;
    done += static_cast<uint64_t>(got);
  }
  return 0;
}

namespace {

// Best of a few rounds, in ns, of `copy` (which returns an errno, 0 on success).
template <class Copy>
int64_t bestOf(const Copy& copy, int* err) {
  int64_t best = std::numeric_limits<int64_t>::max();
  for (int round = 0; round < 5 && *err == 0; ++round) {
    const int64_t start = monotonicNowNs();
    *err = copy();
    best = std::min(best, monotonicNowNs() - start);
  }
  return best;
}

// Which operations a kernel copy at the rate measured pays for.
struct KernelPays {
  bool reductions = false;  // C > 2M/3: kernel time < 1.5 x memcpy time
  bool allgathers = false;  // C > M/2: kernel time < 2 x memcpy time
};

// The kernel's read of `bytes` at `remote` in process `pid` against memcpy of
// the same bytes from `local` (this process's view of them), both into
// `into`: the errno of a failed read, else 0 with `pays` set from the rates.
int timeKernelAgainstMemcpy(pid_t pid, uint64_t remote, const uint8_t* local, uint8_t* into,
                            uint64_t bytes, KernelPays* pays) {
  int err = 0;
  const int64_t kernelNs =
      bestOf([&] { return readProcessMemory(pid, remote, into, bytes); }, &err);
  if (err != 0) return err;
  const int64_t memcpyNs = bestOf(
      [&] {
        std::memcpy(into, local, bytes);
        return 0;
      },
      &err);
  pays->reductions = 2 * kernelNs < 3 * memcpyNs;
  pays->allgathers = kernelNs < 2 * memcpyNs;
  return 0;
}

// Note [shm single copy], "beyond the caches": the kernel's copy of this
// process's own private buffer against memcpy of it; once per process (the
// answer belongs to the machine, not to the group).
KernelPays kernelCopyPaysBeyondCaches() {
  static const KernelPays pays = [] {
    // Both buffers touched before the timing, so no round pays page faults.
    std::vector<uint8_t> from(kLargeProbeBytes, 1);
    std::vector<uint8_t> into(kLargeProbeBytes);
    KernelPays kernelPays;
    const int err = timeKernelAgainstMemcpy(getpid(), reinterpret_cast<uintptr_t>(from.data()),
                                            from.data(), into.data(), kLargeProbeBytes,
                                            &kernelPays);
    return err == 0 ? kernelPays : KernelPays{};
  }();
  return pays;
}

// A verdict from whether the path pays in cache and beyond it.
int32_t verdictFor(bool paysInCache, bool paysBeyondCaches) {
  if (paysInCache) return 0;
  return paysBeyondCaches ? kSingleCopyLargeOnly : kSingleCopySlower;
}

// Note [shm single copy], "whether it pays": the kernel's copy from the next
// rank's mapping of the slots against memcpy from this rank's mapping of the
// same pages, into the same private buffer.
SingleCopyVerdicts timePeerReads(ShmSegment& segment, const ShmPeers& peers) {
  const int peer = (segment.rank() + 1) % segment.size();
  const uint64_t offset = static_cast<uint64_t>(segment.slot(0, 0) - segment.base());
  const uint64_t bytes = std::min<uint64_t>(256 * 1024, segment.slotBytes() * 2 * segment.size());
  const uint64_t remote = segment.control(peer).base.load(std::memory_order_acquire) + offset;
  std::vector<uint8_t> into(bytes);
  KernelPays pays;
  const int err = timeKernelAgainstMemcpy(peers.pid(peer), remote, segment.slot(0, 0),
                                          into.data(), bytes, &pays);
  if (err != 0) return {err, err};
  if (pays.reductions && pays.allgathers) return {0, 0};
  const KernelPays large = kernelCopyPaysBeyondCaches();
  return {verdictFor(pays.reductions, large.reductions),
          verdictFor(pays.allgathers, large.allgathers)};
}

}  // namespace

SingleCopyVerdicts probePeerMemory(ShmSegment& segment, const ShmPeers& peers, bool timeIt) {
  const int n = segment.size();
  const bool wide = n > kWideGroupRanks;
  if (wide && timeIt) {  // Note [Wide groups and the single copy]
    return {kSingleCopyWideGroup, kSingleCopyWideGroup};
  }
  const int probed = wide ? kWideProbePeers : n - 1;
  for (int i = 1; i <= probed; ++i) {
    const int r = (segment.rank() + i) % n;
    uint64_t magic = 0;
    const uint64_t base = segment.control(r).base.load(std::memory_order_acquire);
    const int err = readProcessMemory(peers.pid(r), base, &magic, sizeof(magic));
    if (err != 0) return {err, err};
    if (magic != kSegmentMagic) return {EIO, EIO};
  }
  return timeIt && segment.size() > 1 ? timePeerReads(segment, peers) : SingleCopyVerdicts{};
}

SingleCopyAgreement agreeOnVerdicts(const std::vector<int32_t>& verdicts, uint64_t minBytes) {
  SingleCopyAgreement agreed{-1, minBytes};
  for (size_t r = 0; r < verdicts.size(); ++r) {
    if (verdicts[r] == kSingleCopyLargeOnly) {
      agreed.minBytes = std::max(agreed.minBytes, kSingleCopyLargeBytes);
    } else if (verdicts[r] != 0) {
      return {static_cast<int>(r), minBytes};
    }
  }
  return agreed;
}

SingleCopyAgreement agreeOnVerdicts(ShmSegment& segment, uint64_t minBytes, bool allgathers) {
  std::vector<int32_t> verdicts(static_cast<size_t>(segment.size()));
  for (int r = 0; r < segment.size(); ++r) {
    const RankControl& c = segment.control(r);
    verdicts[static_cast<size_t>(r)] = (allgathers ? c.singleCopyAllgathersErr : c.singleCopyErr)
                                           .load(std::memory_order_acquire);
  }
  return agreeOnVerdicts(verdicts, minBytes);
}

bool everyRankMayRead(ShmSegment& segment) {
  for (int r = 0; r < segment.size(); ++r) {
    const int32_t v = segment.control(r).singleCopyErr.load(std::memory_order_acquire);
    if (v != 0 && v != kSingleCopySlower && v != kSingleCopyLargeOnly) return false;
  }
  return true;
}

std::string singleCopyVerdictText(int32_t verdict) {
  if (verdict == 0) return "it can read every peer's memory";
  if (verdict == kSingleCopyDisabled) return "its option shm.single_copy is off";
  if (verdict == kSingleCopyLargeOnly) {
    return "reading a peer's memory here pays only for messages beyond the caches";
  }
  if (verdict == kSingleCopyWideGroup) {
    return "the group is too wide for reading peers in place to pay (mode auto)";
  }
  if (verdict == kSingleCopySlower) {
    return "reading a peer's memory here is slower than copying through the slots";
  }
  if (verdict == EIO) return "process_vm_readv returned bytes that are not the segment's";
  return std::string("process_vm_readv failed: ") + std::strerror(verdict);
}

}  // namespace distlab::comm::shm
