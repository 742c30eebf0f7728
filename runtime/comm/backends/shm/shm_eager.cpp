#include "runtime/comm/backends/shm/shm_eager.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "runtime/comm/backends/shm/shm_peers.hpp"
#include "runtime/comm/backends/shm/shm_wait.hpp"
#include "runtime/comm/rank_errors.hpp"
#include "runtime/comm/reduce_kernels.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm::shm {
static_assert(kEagerMaxRanks == kWideGroupRanks, "outboxes are laid out up to the wide groups");
namespace {

// The fields an entry's head records of its writer's descriptor, between an
// OpDesc and an EagerHead (same names).
template <class To, class From>
void copyOpFields(To& to, const From& from) {
  to.seq = from.seq;
  to.bytes = from.bytes;
  to.root = from.root;
  to.opType = from.opType;
  to.dtype = from.dtype;
  to.reduceOp = from.reduceOp;
}

// The descriptor an entry's head records, for messages.
OpDesc descOf(const EagerHead& e) {
  OpDesc d{};
  copyOpFields(d, e);
  return d;
}

// Copies of 0 bytes are skipped: an empty tensor's data may be null.
void copyBytes(void* dst, const void* src, uint64_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}
void moveBytes(void* dst, const void* src, uint64_t bytes) {
  if (bytes > 0) std::memmove(dst, src, bytes);
}

std::string rankList(const std::vector<int>& ranks) {
  return fmt::format("[{}]", fmt::join(ranks, ", "));
}

// The ranks of `e`'s readers whose mark on `writer`'s outbox is below `e`'s
// stamp: those that have not copied it out (Note [Eager read marks]).
std::vector<int> readersBehind(ShmSegment& seg, int writer, const EagerHead& e) {
  const uint64_t stamp = e.stamp.load(std::memory_order_relaxed);
  std::vector<int> behind;
  for (int r = 0; r < seg.size(); ++r) {
    if ((e.readerMask >> r & 1U) == 0) continue;
    if (seg.eagerReadMarks(r).readUpTo[writer].load(std::memory_order_acquire) < stamp) {
      behind.push_back(r);
    }
  }
  return behind;
}

}  // namespace

bool eagerFits(const ShmGroup& group, OpType type, uint64_t perRankBytes) {
  if (group.eagerMaxBytes == 0 || group.size < 2) return false;
  // A scatter's root writes every rank's part into its one entry.
  const uint64_t entryBytes =
      type == OpType::kScatter ? perRankBytes * static_cast<uint64_t>(group.size) : perRankBytes;
  return perRankBytes <= group.eagerMaxBytes && entryBytes <= group.eagerMaxBytes;
}

EagerOp::EagerOp(ShmGroup& group, const OpDesc& mine, EagerShape shape, Milliseconds timeout)
    : g_(group),
      mine_(mine),
      shape_(shape),
      timeout_(timeout),
      deadline_(operationDeadline(group, timeout)) {
  // A reader that sees this seq then also sees the entries this rank stamped
  // before it (pollReader's checks).
  announceOperation(g_, mine);
}

bool EagerOp::writes() const {
  return (shape_ == EagerShape::kRootWrites) == (g_.rank == mine_.root);
}

uint32_t EagerOp::readerMask() const {
  const uint32_t rootBit = 1U << mine_.root;
  if (shape_ == EagerShape::kLeavesWrite) return rootBit;
  const uint32_t everyone = (1U << g_.size) - 1;  // g_.size <= kEagerMaxRanks
  return everyone & ~rootBit;
}

bool EagerOp::readByAll(const EagerHead& e) {
  // The writer's own stores (stamp, mask), read back without ordering.
  const uint64_t stamp = e.stamp.load(std::memory_order_relaxed);
  if (stamp == 0) return true;  // never written
  ShmSegment& seg = *g_.segment;
  for (uint32_t left = e.readerMask; left != 0; left &= left - 1) {
    const int r = __builtin_ctz(left);
    uint64_t& seen = g_.eagerMarksSeen[r];
    if (seen >= stamp) continue;
    // Acquire: the reader's copy out happened before its mark.
    seen = seg.eagerReadMarks(r).readUpTo[g_.rank].load(std::memory_order_acquire);
    if (seen < stamp) return false;
  }
  return true;
}

std::string EagerOp::what() const {
  return fmt::format("[shm] group '{}' rank {}: {} (seq {})", g_.groupName, g_.rank,
                     opTypeName(static_cast<OpType>(mine_.opType)), mine_.seq);
}

void EagerOp::runAfterArrival() {
  // Note [Bookkeeping while the stamps travel] in shm_op.hpp.
  if (g_.afterArrival) std::exchange(g_.afterArrival, {})();
}

uint8_t* EagerOp::entryToWrite() {
  ShmSegment& seg = *g_.segment;
  EagerHead& e = seg.eagerEntry(g_.rank, indexOf(g_.rank)).head;
  if (!readByAll(e)) {
    SegmentHeader& h = seg.header();
    waitUntil(
        h.collBell, h.collSleepers, [&] { return readByAll(e) || cancelled(); },
        [&] { pollWriter(e); }, g_.wait);
  }
  if (cancelled()) throwCancelledOp(what());
  return seg.eagerEntry(g_.rank, indexOf(g_.rank)).data;
}

void EagerOp::publish() {
  ShmSegment& seg = *g_.segment;
  EagerHead& e = seg.eagerEntry(g_.rank, indexOf(g_.rank)).head;
  copyOpFields(e, mine_);
  e.readerMask = readerMask();
  e.stamp.store(indexOf(g_.rank) + 1, std::memory_order_release);
  ring(seg.header().collBell, seg.header().collSleepers);
  runAfterArrival();
}

const uint8_t* EagerOp::entryOf(int w, uint64_t readOffset) {
  ShmSegment& seg = *g_.segment;
  EagerEntry& entry = seg.eagerEntry(w, indexOf(w));
  const uint64_t want = indexOf(w) + 1;
  // The data line travels with the stamp's, not after it: a reader that finds
  // the entry stamped (its writer ran ahead) would otherwise miss twice in a row.
  __builtin_prefetch(entry.data + readOffset);
  runAfterArrival();  // while the writer's stamp travels
  if (entry.head.stamp.load(std::memory_order_acquire) < want) {
    SegmentHeader& h = seg.header();
    waitUntil(
        h.collBell, h.collSleepers,
        [&] {
          // Note [Fetching the slot while waiting] in shm_op.hpp, for the entry.
          __builtin_prefetch(entry.data + readOffset);
          return entry.head.stamp.load(std::memory_order_acquire) >= want || cancelled();
        },
        [&] { pollReader(w, entry.head); }, g_.wait);
  }
  if (cancelled()) throwCancelledOp(what());
  checkWriter(w, entry.head);
  return entry.data;
}

void EagerOp::doneWith(int w) {
  ShmSegment& seg = *g_.segment;
  // Note [Eager read marks]; the writer may be waiting for this entry.
  seg.eagerReadMarks(g_.rank).readUpTo[w].store(indexOf(w) + 1, std::memory_order_release);
  ring(seg.header().collBell, seg.header().collSleepers);
}

uint8_t* EagerOp::scratch(uint64_t bytes) {
  if (g_.scratch.size() < bytes) g_.scratch.resize(bytes);
  return g_.scratch.data();
}

void EagerOp::finish() {
  if (shape_ == EagerShape::kRootWrites) {
    ++g_.eagerWritten[mine_.root];
    return;
  }
  for (int w = 0; w < g_.size; ++w) {
    if (w != mine_.root) ++g_.eagerWritten[w];
  }
}

void EagerOp::checkWriter(int w, const EagerHead& e) {
  const OpDesc theirs = descOf(e);
  if (!sameOperation(theirs, mine_, true)) {
    throwMismatch(fmt::format("rank {} runs {}, but rank {} runs {}", w, describeOp(theirs),
                              g_.rank, describeOp(mine_)));
  }
}

void EagerOp::throwMismatch(const std::string& diff) {
  g_.oneSidedMismatch.store(true, std::memory_order_relaxed);
  throw DistBackendError(
      fmt::format("{}: Detected mismatch between collectives on ranks: {}", what(), diff));
}

void EagerOp::throwIfAbortedOrPeerFailed(const std::vector<int>& waitedFor) {
  ShmSegment& seg = *g_.segment;
  if (g_.aborted && g_.aborted->load(std::memory_order_acquire)) {
    throw DistBackendError(what() + ": aborted while waiting for peers");
  }
  for (int r = 0; r < g_.size; ++r) {
    if (r != g_.rank && seg.control(r).failed.load(std::memory_order_acquire) != 0) {
      throwPeerFailure(seg, r, what(), &waitedFor);
    }
  }
}

void EagerOp::pollReader(int w, const EagerHead& e) {
  throwIfAbortedOrPeerFailed({w});
  ShmSegment& seg = *g_.segment;
  RankControl& c = seg.control(w);
  // Read before the stamp's re-check: what the writer did after stamping
  // (Note [Eager rooted operations]) is then known not to be this entry.
  const uint64_t seq = c.seq.load(std::memory_order_acquire);
  const auto type = static_cast<OpType>(c.opType.load(std::memory_order_acquire));
  const uint64_t step = c.step.load(std::memory_order_acquire);
  if (e.stamp.load(std::memory_order_acquire) >= indexOf(w) + 1) return;  // arrived meanwhile
  const std::string mineText = describeOp(mine_);
  if (seq > mine_.seq) {
    throwMismatch(fmt::format("rank {} moved on to {} (seq {}) without writing its part of "
                              "rank {}'s {}",
                              w, opTypeName(type), seq, g_.rank, mineText));
  }
  if (seq == mine_.seq && type != static_cast<OpType>(mine_.opType)) {
    throwMismatch(fmt::format("rank {} runs {} (seq {}), but rank {} runs {}", w,
                              opTypeName(type), seq, g_.rank, mineText));
  }
  if (seq == mine_.seq && step > g_.step) {
    // The writer took the steps for this operation: its size is over the
    // eager limit where this rank's is not.
    const OpDesc& theirs = seg.desc(w, static_cast<int>(step & 1));
    throwMismatch(fmt::format("rank {} runs {}, but rank {} runs {}", w, describeOp(theirs),
                              g_.rank, mineText));
  }
  for (int r : g_.peers->exited()) {
    if (r == w) {
      throw DistRanksPeerFailureError(
          fmt::format("{}: rank {} (pid {}) exited while this rank waited for it ({})", what(),
                      w, g_.peers->pid(w), describeRank(seg, w)),
          {w});
    }
  }
  if (deadline_.expired()) {
    throw DistRanksTimeoutError(
        fmt::format("{} timed out after {} ms: ranks [{}] have not arrived ({})", what(),
                    timeout_.count(), w, describeRank(seg, w)),
        {w});
  }
}

void EagerOp::pollWriter(const EagerHead& e) {
  const std::vector<int> unread = readersBehind(*g_.segment, g_.rank, e);
  if (unread.empty()) return;  // read meanwhile: the wait ends at its next check
  throwIfAbortedOrPeerFailed(unread);
  ShmSegment& seg = *g_.segment;
  for (int r : g_.peers->exited()) {
    if (std::find(unread.begin(), unread.end(), r) != unread.end()) {
      throw DistRanksPeerFailureError(
          fmt::format("{}: rank {} (pid {}) exited before reading this rank's {} ({})", what(), r,
                      g_.peers->pid(r), describeOp(descOf(e)), describeRank(seg, r)),
          {r});
    }
  }
  if (deadline_.expired()) {
    std::string progress;
    for (int r : unread) progress += "; " + describeRank(seg, r);
    throw DistRanksTimeoutError(
        fmt::format("{} timed out after {} ms: ranks {} have not arrived: this rank's {} "
                    "entries are full, and its {} has not been read{}",
                    what(), timeout_.count(), rankList(unread), kEagerEntries,
                    describeOp(descOf(e)), progress),
        unread);
  }
}

std::string unreadEagerEntries(ShmGroup& g) {
  const uint64_t written = g.eagerWritten[g.rank];
  // Older entries were reused, which their writer does only once they are read.
  const uint64_t from = std::max<uint64_t>(
      g.eagerConfirmed, written > uint64_t{kEagerEntries} ? written - kEagerEntries : 0);
  g.eagerConfirmed = written;
  for (uint64_t i = from; i < written; ++i) {
    const EagerHead& e = g.segment->eagerEntry(g.rank, i).head;
    const std::vector<int> behind = readersBehind(*g.segment, g.rank, e);
    if (behind.empty()) continue;
    return fmt::format("rank {}'s {} was not read by ranks {}, which had to read it: they ran "
                       "another collective at seq {}",
                       g.rank, describeOp(descOf(e)), rankList(behind), e.seq);
  }
  return "";
}

// The algorithms. Readers copy out before doneWith (the entry is reused after).

void broadcastEager(EagerOp& op, uint8_t* data, uint64_t bytes) {
  if (op.writes()) {
    copyBytes(op.entryToWrite(), data, bytes);
    op.publish();
  } else {
    copyBytes(data, op.entryOf(op.root()), bytes);
    op.doneWith(op.root());
  }
  op.finish();
}

void reduceEager(EagerOp& op, uint8_t* data, uint64_t count, DType dtype, ReduceOp redop) {
  if (op.writes()) {
    uint8_t* entry = op.entryToWrite();
    if (count > 0) stageInput(entry, data, count, dtype, redop);
    op.publish();
    op.finish();
    return;
  }
  // The root's own input staged apart: reduceN's output must not be a source.
  uint8_t* mine = op.scratch(count * elementSize(dtype));
  if (count > 0) stageInput(mine, data, count, dtype, redop);
  std::array<const void*, kWideGroupRanks> srcs;
  for (int r = 0; r < op.size(); ++r) srcs[r] = r == op.rank() ? mine : op.entryOf(r);
  reduceN(data, srcs.data(), op.size(), count, dtype, redop);
  for (int r = 0; r < op.size(); ++r) {
    if (r != op.rank()) op.doneWith(r);
  }
  op.finish();
}

void gatherEager(EagerOp& op, const uint8_t* in, uint64_t bytes, std::span<uint8_t* const> outs) {
  if (op.writes()) {
    copyBytes(op.entryToWrite(), in, bytes);
    op.publish();
    op.finish();
    return;
  }
  for (int r = 0; r < op.size(); ++r) {
    if (r == op.rank()) {
      moveBytes(outs[r], in, bytes);
      continue;
    }
    copyBytes(outs[r], op.entryOf(r), bytes);
    op.doneWith(r);
  }
  op.finish();
}

void scatterEager(EagerOp& op, std::span<const uint8_t* const> ins, uint8_t* out,
                  uint64_t bytes) {
  if (op.writes()) {
    uint8_t* entry = op.entryToWrite();
    for (int q = 0; q < op.size(); ++q) {
      if (q != op.rank()) copyBytes(entry + q * bytes, ins[q], bytes);
    }
    op.publish();
    moveBytes(out, ins[op.rank()], bytes);
  } else {
    const uint64_t mine = static_cast<uint64_t>(op.rank()) * bytes;
    copyBytes(out, op.entryOf(op.root(), mine) + mine, bytes);
    op.doneWith(op.root());
  }
  op.finish();
}

}  // namespace distlab::comm::shm
