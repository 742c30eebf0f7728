#include "runtime/comm/backends/shm/shm_op.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>

#include "runtime/comm/backends/shm/shm_eager.hpp"
#include "runtime/comm/backends/shm/shm_single_copy.hpp"
#include "runtime/comm/backends/shm/shm_wait.hpp"
#include "runtime/comm/rank_errors.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/tensor/dtype.hpp"

namespace distlab::comm::shm {

void throwPeerFailure(ShmSegment& segment, int peer, const std::string& context,
                      const std::vector<int>* missing) {
  RankControl& c = segment.control(peer);
  const auto kind = static_cast<FailureKind>(c.failed.load(std::memory_order_acquire));
  const std::string msg = fmt::format("{}: rank {} failed: {}", context, peer,
                                      std::string(c.reason, strnlen(c.reason, sizeof(c.reason))));
  switch (kind) {
    case FailureKind::kTimeout:
      if (missing) throw DistRanksTimeoutError(msg, *missing);
      throw DistTimeoutError(msg);
    case FailureKind::kPeerDied:
      if (missing) throw DistRanksPeerFailureError(msg, *missing);
      throw DistPeerFailureError(msg);
    default: throw DistBackendError(msg);
  }
}

namespace {
// Copies a descriptor without its stamp (the stamp is written on its own).
void copyDesc(OpDesc& to, const OpDesc& from) { std::memcpy(&to, &from, offsetof(OpDesc, stamp)); }
}  // namespace

std::vector<int> ShmOp::notArrived() const {
  std::vector<int> out;
  for (int r = 0; r < g_.size; ++r) {
    if (g_.segment->control(r).step.load(std::memory_order_acquire) < g_.step) out.push_back(r);
  }
  return out;
}

ShmOp::ShmOp(ShmGroup& group, const OpDesc& mine, bool equalBytes, Milliseconds timeout,
             std::span<const uint64_t> counts)
    : g_(group),
      counts_(counts),
      equalBytes_(equalBytes),
      timeout_(timeout),
      deadline_(operationDeadline(group, timeout)) {
  DL_CHECK(counts.empty() == !mine.hasCounts &&
               (counts.empty() || counts.size() == 2 * static_cast<size_t>(g_.size)),
           "ShmOp: counts must be 2 * size() values exactly when the descriptor hasCounts");
  copyDesc(mine_, mine);
  if (g_.descs.size() < static_cast<size_t>(g_.size)) g_.descs.resize(g_.size);
  announceOperation(g_, mine);
}

Deadline operationDeadline(const ShmGroup& group, Milliseconds timeout) {
  return group.opStartedNs != 0 ? Deadline::afterStart(group.opStartedNs, timeout)
                                : Deadline::after(timeout);
}

void announceOperation(ShmGroup& group, const OpDesc& mine) {
  RankControl& me = group.segment->control(group.rank);
  me.opType.store(mine.opType, std::memory_order_release);
  me.seq.store(mine.seq, std::memory_order_release);
}

bool sameOperation(const OpDesc& a, const OpDesc& b, bool compareBytes) {
  return a.seq == b.seq && a.opType == b.opType && a.dtype == b.dtype &&
         a.reduceOp == b.reduceOp && a.root == b.root && (!compareBytes || a.bytes == b.bytes);
}

uint64_t ShmOp::partBytes() const { return (slotBytes() / size()) & ~uint64_t{63}; }

uint8_t* ShmOp::writeSlot() {
  if (smallDataNext_) return mine_.smallData;
  return g_.segment->slot(g_.rank, (g_.step + 1) & 1);
}

const uint8_t* ShmOp::readSlot(int r) {
  if (smallDataRead_) return g_.descs[r].smallData;
  return g_.segment->slot(r, g_.step & 1);
}

bool ShmOp::carrySmallData(uint64_t bytes) {
  // Each rank decides from its own size, so only operations whose sizes
  // are compared (equalBytes) may: the ranks then decide alike or fail.
  DL_CHECK(first_ && equalBytes_, "ShmOp::carrySmallData: only before the first step of an "
                                  "operation whose ranks contribute equal bytes");
  smallDataNext_ = bytes <= kDescSmallDataBytes;
  return smallDataNext_;
}

std::string ShmOp::what() const {
  return fmt::format("[shm] group '{}' rank {}: {} (seq {})", g_.groupName, g_.rank,
                     opTypeName(static_cast<OpType>(mine_.opType)), mine_.seq);
}

void throwCancelledOp(const std::string& what) {
  throw DistBackendError(what + ": cancelled: the operation was failed from outside the "
                                "backend (watchdog timeout or Work::abort)");
}

void ShmOp::throwCancelled() { throwCancelledOp(what()); }

void ShmOp::sync() {
  if (cancelled()) throwCancelled();
  ShmSegment& seg = *g_.segment;
  const uint64_t target = g_.step + 1;
  const int parity = static_cast<int>(target & 1);
  const bool smallData = std::exchange(smallDataNext_, false);
  OpDesc& published = seg.desc(g_.rank, parity);
  if (first_) {
    copyDesc(published, mine_);
    if (!counts_.empty()) {
      uint64_t* out = seg.counts(g_.rank, parity);
      std::memcpy(out, counts_.data(), counts_.size_bytes());
      const auto sent = counts_.first(static_cast<size_t>(g_.size));
      out[2 * g_.size] = *std::max_element(sent.begin(), sent.end());
    }
  }
  // Note [Arrival in the descriptor line]: the step first, so whoever sees the
  // stamp also sees the step (diagnostics and the dead-peer check read it).
  seg.control(g_.rank).step.store(target, std::memory_order_release);
  std::atomic_ref<uint64_t>(published.stamp).store(target, std::memory_order_release);
  g_.step = target;
  const int n = g_.size;
  const bool wide = n > kWideGroupRanks;
  SegmentHeader& header = seg.header();
  if (!wide) {
    ring(header.collBell, header.collSleepers);
  } else if ((header.arrivals.fetch_add(1, std::memory_order_acq_rel) + 1) % n == 0) {
    ring(header.collBell, header.collSleepers);  // Note [Wide groups count arrivals]
  }
  // Note [Bookkeeping while the stamps travel]
  if (g_.afterArrival) std::exchange(g_.afterArrival, {})();
  const uint64_t everyArrival = static_cast<uint64_t>(n) * target;
  int next = 0;  // ranks below `next` are known to have arrived
  waitUntil(
      header.collBell, header.collSleepers,
      [&] {
        if (wide) {
          return header.arrivals.load(std::memory_order_acquire) >= everyArrival || cancelled();
        }
        while (next < n && std::atomic_ref<uint64_t>(seg.desc(next, parity).stamp)
                                   .load(std::memory_order_acquire) >= target) {
          ++next;
        }
        // Note [Fetching the slot while waiting]: not when the data is in
        // the head (Note [Small data in the descriptor line]).
        if (next < n && !smallData) __builtin_prefetch(seg.slot(next, parity) + readOffset_);
        return next == n || cancelled();
      },
      [&] { poll(); }, g_.wait);
  // Even when every peer arrived: a cancelled op must not read or write more.
  if (cancelled()) throwCancelled();
  smallDataRead_ = smallData;
  if (first_) {
    first_ = false;
    for (int r = 0; r < n; ++r) copyDesc(g_.descs[r], seg.desc(r, parity));
    validate();
    if (eagerEntriesToConfirm(g_)) {
      // Every rank has finished everything before this step (Note [Eager
      // rooted operations]).
      const std::string unread = unreadEagerEntries(g_);
      if (!unread.empty()) {
        g_.oneSidedMismatch.store(true, std::memory_order_relaxed);
        throw DistBackendError(fmt::format(
            "{}: Detected mismatch between collectives on ranks: {}", what(), unread));
      }
    }
    if (!counts_.empty()) {
      const std::string diff = checkCounts(parity);
      if (!diff.empty()) {
        throw DistBackendError(fmt::format(
            "{}: Detected mismatch between collectives on ranks: {}", what(), diff));
      }
    }
  }
}

void ShmOp::poll() {
  ShmSegment& seg = *g_.segment;
  if (g_.aborted && g_.aborted->load(std::memory_order_acquire)) {
    throw DistBackendError(what() + ": aborted while waiting for peers");
  }
  const uint64_t target = g_.step;
  for (int r = 0; r < g_.size; ++r) {
    if (r != g_.rank && seg.control(r).failed.load(std::memory_order_acquire) != 0) {
      const std::vector<int> missing = notArrived();
      throwPeerFailure(seg, r, what(), &missing);
    }
  }
  throwIfSkipped();
  for (int r : g_.peers->exited()) {
    if (seg.control(r).step.load(std::memory_order_acquire) < target) {
      throw DistRanksPeerFailureError(fmt::format(
          "{}: rank {} (pid {}) exited while this rank waited for it ({})", what(), r,
          g_.peers->pid(r), describeRank(seg, r)), notArrived());
    }
  }
  if (deadline_.expired()) throwTimeout();
}

void ShmOp::throwIfSkipped() {
  ShmSegment& seg = *g_.segment;
  for (int r = 0; r < g_.size; ++r) {
    RankControl& c = seg.control(r);
    // The seq first (release after every step its rank took before it): a
    // rank at a later operation that has not arrived here never will.
    const uint64_t seq = c.seq.load(std::memory_order_acquire);
    if (seq <= mine_.seq || c.step.load(std::memory_order_acquire) >= g_.step) continue;
    throw DistBackendError(fmt::format(
        "{}: Detected mismatch between collectives on ranks: rank {} moved on to {} (seq {}) "
        "without arriving at rank {}'s {}",
        what(), r, opTypeName(static_cast<OpType>(c.opType.load(std::memory_order_acquire))),
        seq, g_.rank, describeOp(mine_)));
  }
}

void ShmOp::throwTimeout() {
  ShmSegment& seg = *g_.segment;
  const std::vector<int> ranks = notArrived();
  std::string missing, progress;
  for (int r : ranks) {
    missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    progress += "; " + describeRank(seg, r);
  }
  throw DistRanksTimeoutError(
      fmt::format(
          "{} timed out after {} ms: ranks [{}] have not arrived (this rank waits at step {}{})",
          what(), timeout_.count(), missing, g_.step, progress),
      ranks);
}

void ShmOp::readPeer(int r, uint64_t offset, void* dst, uint64_t bytes) {
  if (bytes == 0) return;
  const int err =
      readProcessMemory(g_.peers->pid(r), g_.descs[r].singleCopy.addr + offset, dst, bytes);
  if (err != 0) throwFailedRead(r, err);
}

void ShmOp::throwFailedRead(int r, int err) {
  ShmSegment& seg = *g_.segment;
  if (seg.control(r).failed.load(std::memory_order_acquire) != 0) throwPeerFailure(seg, r, what());
  // ESRCH: the peer has no memory any more. An exiting process drops its
  // memory before its pidfd reports the exit, so alive() may still say yes.
  if (err == ESRCH || !g_.peers->alive(r)) throwExitedDuringRead(r);
  if (cancelled()) throwCancelled();
  throw DistBackendError(fmt::format("{}: reading rank {}'s buffer (pid {}) failed: {}", what(), r,
                                     g_.peers->pid(r), singleCopyVerdictText(err)));
}

void ShmOp::confirmPeersAlive() {
  for (int r = 0; r < g_.size; ++r) {
    if (r != g_.rank && !g_.peers->alive(r)) throwExitedDuringRead(r);
  }
}

void ShmOp::throwExitedDuringRead(int r) {
  throw DistRanksPeerFailureError(
      fmt::format("{}: rank {} (pid {}) exited while this rank read its buffer", what(), r,
                  g_.peers->pid(r)),
      {r});
}

uint8_t* ShmOp::scratch(uint64_t bytes) {
  if (g_.scratch.size() < bytes) g_.scratch.resize(bytes);
  return g_.scratch.data();
}

std::string describeOp(const OpDesc& d) {
  std::string s = fmt::format("{}(seq {}, {} bytes, {}", opTypeName(static_cast<OpType>(d.opType)),
                              d.seq, d.bytes, dtypeName(static_cast<DType>(d.dtype)));
  if (d.root >= 0) s += fmt::format(", root {}", d.root);
  ReduceOp op(static_cast<ReduceOp::Kind>(d.reduceOp));
  return s + fmt::format(", op {})", reduceOpName(op));
}

void ShmOp::validate() {
  const OpDesc& a = g_.descs[0];
  std::string diff;
  for (int r = 1; r < g_.size && diff.empty(); ++r) {
    const OpDesc& b = g_.descs[r];
    if (!sameOperation(a, b, equalBytes_)) {
      diff = fmt::format("rank 0 runs {}, but rank {} runs {}", describeOp(a), r,
                         describeOp(b));
    }
  }
  if (!diff.empty()) {
    throw DistBackendError(fmt::format(
        "{}: Detected mismatch between collectives on ranks: {}", what(), diff));
  }
}

// Note [Counts read in place]
// A rank's counts of this parity are rewritten only by its next operation's
// first step of the same parity, which it cannot reach before this rank
// arrives again: between the first wait and this rank's next arrival they are
// stable, so they are read where they were published. Up to
// kFullCountCheckRanks every rank checks every pair (each reports the same
// first disagreement); above, the n^2 reads on every rank would cost more
// than the operation, so each rank checks the pairs it is part of: the two
// ranks of a disagreeing pair raise, and their peers learn it from their
// published failure at the next step.
inline constexpr int kFullCountCheckRanks = 64;

std::string ShmOp::checkCounts(int parity) {
  ShmSegment& seg = *g_.segment;
  const int n = g_.size;
  auto sends = [&](int p, int q) { return seg.counts(p, parity)[q]; };
  auto expects = [&](int q, int p) { return seg.counts(q, parity)[n + p]; };
  auto pairText = [&](int p, int q) {
    return fmt::format("rank {} sends {} bytes to rank {}, which expects {} bytes", p, sends(p, q),
                       q, expects(q, p));
  };
  const bool everyPair = n <= kFullCountCheckRanks;
  for (int p = 0; p < n; ++p) {
    if (!everyPair && p != g_.rank) {
      if (sends(p, g_.rank) != expects(g_.rank, p)) return pairText(p, g_.rank);
      if (sends(g_.rank, p) != expects(p, g_.rank)) return pairText(g_.rank, p);
      continue;
    }
    for (int q = 0; q < n; ++q) {
      if (sends(p, q) != expects(q, p)) return pairText(p, q);
    }
  }
  // From what every rank sends: the same on every rank.
  largestCount_ = 0;
  for (int p = 0; p < n; ++p) largestCount_ = std::max(largestCount_, seg.counts(p, parity)[2 * n]);
  return "";
}

}  // namespace distlab::comm::shm
