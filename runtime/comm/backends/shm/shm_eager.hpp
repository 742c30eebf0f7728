#pragma once
// Small rooted collectives without the full arrival: broadcast, reduce, gather
// and scatter whose data fits one outbox entry.
//
// Note [Eager rooted operations]
// A step (Note [shm steps]) makes every rank wait until every rank arrived, so
// a rooted operation costs what an all-reduce costs even though only the root
// (broadcast, scatter) or only the leaves (reduce, gather) have anything to
// say. With more ranks than cores that wait is a scheduler hand-off per
// operation: a 32 B broadcast took ~18 us at world 4 on two cores, where
// Open MPI's shared-memory transport, whose sender returns once its fragment
// is in the peer's queue, took 0.3 us. So, up to kEagerDataBytes
// (shm.eager_bytes), these operations are one-sided, through per-rank
// outboxes of kEagerEntries entries (a head line and the data):
//   - the writer (the root of a broadcast or scatter, each leaf of a reduce or
//     gather) waits until its next entry has been read by everyone who had to
//     read it, K operations ago (free at once while readers keep up), writes
//     its operation's descriptor, its readers and data, stamps the entry
//     (release) and returns: its operation is complete;
//   - each reader (the leaves; the root) waits for that entry's stamp, checks
//     the descriptor against its own operation (as ShmOp::validate does),
//     copies the data out and raises its read mark on that outbox.
// Every rank counts every rank's entries the same way (ShmGroup::eagerWritten,
// advanced by each eager operation for its writers), so a reader knows which
// entry of which outbox holds its operation without any exchange. A writer
// runs up to K operations ahead of its slowest reader, which is what lets a
// root keep its core busy while its leaves are descheduled.
//
// What the one-sided path gives up, and how it is recovered:
//   - A mismatch is found by readers, not writers: a reader raises when the
//     entry's descriptor differs from its own, or, while it waits, when the
//     writer runs another operation at this sequence number or has moved past
//     it (its RankControl seq and op type). Its failure is published and
//     marked as one its peers may not see (SegmentHeader::oneSidedMismatchRank):
//     from then on every rank's backend reports the group failed with that
//     rank's reason (ShmBackend::errorReason), so the writer's next operation
//     is refused naming the mismatch. The DETAIL wrapper's barrier before that
//     operation cannot complete without the failed rank; it then lets the
//     backend refuse the operation instead of reporting a missed barrier.
//   - Two ranks that both write (a broadcast from rank 0 against a reduce to
//     rank 0) leave entries nobody reads: the next step-based operation, whose
//     first wait proves every rank finished everything before it, finds them
//     unread and raises the mismatch (ShmGroup::eagerConfirmed), and a writer
//     whose outbox fills raises at its deadline naming the ranks that have not
//     read.
//   - A writer's Work completes before its readers have the data (as with
//     NCCL and MPI); a reader that fails afterwards fails the group, which the
//     writer sees at its next operation.
// Groups of more than kWideGroupRanks ranks keep the steps (no outboxes are
// laid out): there one stamp would wake hundreds of sleepers twice (publish,
// last read), where a counted step wakes each once (Note [Wide groups count
// arrivals] in shm_op.hpp). shm.eager_bytes=0 turns the path off.
//
// Note [Eager read marks]
// A reader says it is done with an entry by storing the entry's stamp in its
// own row of marks (EagerReadMarks::readUpTo[writer]), not by decrementing a
// count in the entry's head: a read-modify-write on the writer's line is a
// locked instruction that must own that line, while a store to the reader's
// own row, which stays in its cache between the writer's looks, is not, and
// the bell's fence after it has less to wait for. Marks only grow, and a
// reader reads a writer's entries in order, so an entry stamped s is free once
// every rank of its readerMask has a mark of at least s; the writer keeps the
// marks it last loaded (ShmGroup::eagerMarksSeen) and loads a reader's row
// again only when that copy is not enough. The marks also say exactly which
// readers are behind (a full outbox, unread entries). A reader fetches the
// entry's data line together with its head line: timed with serialised
// cycle counters at world 2, a reader that found the 8 B entry already
// stamped spent ~315 cycles copying it (a second miss, after the stamp's)
// and ~45 with the prefetch. Both changes together took 5-14% off the blocking
// rooted operations at 8 B (reports/collectives_shm_notes.md, section
// "2026-12-07 (AMD EPYC VM, late)"): what is left of their 0.25-0.4 us is mostly the
// per-operation cost around the data path, timed part by part there.
//
// Waits follow Note [shm waiting], on the group's collective bell; failures
// raise the same kinds as ShmOp's (timeout and dead peer naming the ranks
// waited for, mismatch, abort, cancel).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/comm/backends/shm/shm_op.hpp"
#include "runtime/comm/types.hpp"
#include "runtime/tensor/dtype.hpp"

namespace distlab::comm::shm {

// Who writes in an eager operation.
enum class EagerShape {
  kRootWrites,    // broadcast, scatter: the root writes, every other rank reads
  kLeavesWrite,   // reduce, gather: every rank but the root writes, the root reads
};

// Whether an operation of `type` moving `perRankBytes` per rank (the same on
// every rank) takes the eager path in `group` (shm.eager_bytes, outboxes laid out).
bool eagerFits(const ShmGroup& group, OpType type, uint64_t perRankBytes);

class EagerOp {
 public:
  // `mine`: the descriptor a ShmOp would publish (seq, type, dtype, reduce op,
  // root, per-rank bytes). Deadline as ShmOp's.
  EagerOp(ShmGroup& group, const OpDesc& mine, EagerShape shape, Milliseconds timeout);

  int rank() const { return g_.rank; }
  int size() const { return g_.size; }
  int root() const { return mine_.root; }
  bool writes() const;  // this rank is a writer of this operation

  // Writer: waits until this rank's next entry is free; its data area.
  uint8_t* entryToWrite();
  // Writer: publishes the entry written through entryToWrite().
  void publish();
  // Reader: waits for writer w's entry of this operation, checks it; its data,
  // valid until doneWith(w). `readOffset`: where in the data this rank reads
  // first (the wait prefetches that line).
  const uint8_t* entryOf(int w, uint64_t readOffset = 0);
  void doneWith(int w);
  // A per-group scratch buffer of at least `bytes` (allocated once).
  uint8_t* scratch(uint64_t bytes);
  // Advances every rank's entry count for this operation's writers; call once
  // the operation's reads and writes are done.
  void finish();

 private:
  uint64_t indexOf(int w) const { return g_.eagerWritten[w]; }
  uint32_t readerMask() const;
  // Whether entry `e` (this rank's) has been read by every rank that had to:
  // those of its readerMask whose mark reached its stamp.
  bool readByAll(const EagerHead& e);
  void runAfterArrival();
  void checkWriter(int w, const EagerHead& e);
  void pollReader(int w, const EagerHead& e);
  void pollWriter(const EagerHead& e);
  void throwIfAbortedOrPeerFailed(const std::vector<int>& waitedFor);
  [[noreturn]] void throwMismatch(const std::string& diff);
  bool cancelled() const { return g_.cancelled.load(std::memory_order_acquire); }
  std::string what() const;

  ShmGroup& g_;
  OpDesc mine_;
  EagerShape shape_;
  Milliseconds timeout_;
  Deadline deadline_;
};

// The algorithms (shm_eager.cpp); each ends with op.finish().
void broadcastEager(EagerOp& op, uint8_t* data, uint64_t bytes);
void reduceEager(EagerOp& op, uint8_t* data, uint64_t count, DType dtype, ReduceOp redop);
// outs: on the root, rank q's input lands in outs[q]; ignored elsewhere.
void gatherEager(EagerOp& op, const uint8_t* in, uint64_t bytes, std::span<uint8_t* const> outs);
// ins: on the root, ins[q] (bytes each) goes to rank q; ignored elsewhere.
void scatterEager(EagerOp& op, std::span<const uint8_t* const> ins, uint8_t* out,
                  uint64_t bytes);

// Note [Eager rooted operations]: at a step-based operation's first wait, the
// entries this rank wrote since the previous check must all have been read.
// eagerEntriesToConfirm is the inline fast path (usually false);
// unreadEagerEntries describes the first entry not read by everyone who had
// to ("" when none) and marks them confirmed.
inline bool eagerEntriesToConfirm(const ShmGroup& g) {
  return !g.eagerWritten.empty() && g.eagerWritten[g.rank] != g.eagerConfirmed;
}
std::string unreadEagerEntries(ShmGroup& group);

}  // namespace distlab::comm::shm
