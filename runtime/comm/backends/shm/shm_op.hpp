#pragma once
// ShmOp: one collective's walk through the segment's steps.
//
// Note [shm steps]
// Each rank counts the steps it has arrived at (RankControl::step, monotonic
// across operations). A step is: write your part into your slot of parity
// (step % 2), arrive (step++), wait until every rank arrived at that step, then
// read any rank's slot of that parity until your next arrival. The wait also
// proves every rank has finished reading the previous step, so the other parity
// is free to write: two buffers give a pipeline where a fast rank writes chunk
// k+1 while a slow one still reads chunk k. One wait per step, no extra
// "done reading" barrier. Small broadcasts, reduces, gathers and scatters take
// no step: Note [Eager rooted operations] in shm_eager.hpp.
//
// Note [Arrival in the descriptor line]
// Arriving stores the step twice: in RankControl::step (what diagnostics, the
// dead-peer check and describeRank read) and then as the stamp in this rank's
// OpDesc head of that step's parity, which is what waiters poll. The head is
// one cache line, so a waiter that sees a peer arrive has the peer's
// descriptor in the same transfer: a small allreduce moves two lines per peer
// (descriptor, slot), not three (step, descriptor, slot), and each line is a
// cross-core miss of ~0.1 us on the critical path. Peers no longer poll the
// RankControl line either, so this rank's stores to it (seq and op type at
// each operation's start, the step) stay in its own cache.
//
// Note [Fetching the slot while waiting]
// The slot line is still a second miss after the stamp: the data is read only
// once the stamp says it is there. So while a peer's stamp is missing, every
// poll also prefetches the first line of that peer's slot for this step that
// this rank reads (what a small operation reads first: the slot's start, or
// this rank's part of it in a reduce-scatter, all-to-all or scatter): the
// fetch that brings the stamp then finds
// the data on its way or already here, and a prefetch can neither fault nor
// make anything visible early (the reads after the acquire of the stamp are
// what see the data). It pays up to 512 B (reports/collectives_shm_notes.md).
// Only one line: prefetching more slowed 256 B-2 KiB down (the peer's writes
// to lines this rank keeps fetching wait for them).
//
// Note [Bookkeeping while the stamps travel]
// A blocking operation run inline (Note [Unshared execution] in work.hpp)
// builds its Work -- the WorkInfo with its strings and tensor metadata, the
// allocation -- a quarter of the operation's instructions
// (reports/collectives_shm_notes.md). Nobody
// can see the Work before the operation returns, so it is built in the one
// idle moment of a small operation instead: after this rank arrived at its
// first step and before it waits for its peers (ShmGroup::afterArrival, run
// once by the first sync). Each rank's arrival then reaches its peers that
// much sooner, while the peers' stamps travel towards it. A body that throws
// before its first sync, or never syncs, has its Work built afterwards.
//
// Note [Small data in the descriptor line]
// Even with the slot fetched while waiting, a small operation's arrival
// moves two lines to each peer: the descriptor line with the stamp, and the
// slot line, which the waiting peer keeps prefetching and the arriving rank
// must take back before it writes. An operation whose first step publishes
// at most kDescSmallDataBytes of this rank's data and reads only that step's
// data can carry it in the descriptor head instead (carrySmallData()): the
// head has room because the fields only the single-copy path reads (a
// buffer address, PREMUL_SUM's scalar) are not needed by an operation that
// reads no peer's memory. The data is staged into this rank's own copy of
// the head, published with it in one line before the stamp, and read from
// the copies of the peers' heads this rank makes after the wait anyway
// (validate() has compared sizes by then, so a mismatch still raises before
// any data is read). Every rank decides from its own size alone; ranks whose
// sizes differ fail that comparison.
//
// Note [Wide groups count arrivals]
// An arrival rings the group's bell when somebody sleeps on it, and every
// sleeper wakes to look: fine for a few ranks, but in a group of n ranks that
// mostly sleep (hundreds of ranks on a few cores) a step would cost n^2
// wake-ups. A group of more than kWideGroupRanks ranks therefore also counts
// arrivals in SegmentHeader::arrivals (one shared read-modify-write per
// arrival, which small groups avoid), and waits for the count instead of the
// stamps: every rank arrived at step s exactly when the count reached n * s
// (a rank arrives at s + 1 only after all arrived at s, so no count can get
// there early), and only the arrival whose increment reaches a multiple of n
// rings. Each step then wakes each sleeper once. The count is read with
// acquire and every increment is a release, so a waiter that sees n * s sees
// every rank's writes before its arrival.
//
// The first step also publishes this rank's OpDesc (op, seq, dtype, sizes); after
// it every rank compares all descriptors, so a mismatch raises on every rank
// before any rank reads a byte of another's data.
//
// Waiting follows Note [shm waiting]. Failures: DistTimeoutError (deadline; the
// message names the ranks that have not arrived and where they are),
// DistPeerFailureError (a rank's process exited) -- both as the rank_errors.hpp
// subclasses carrying the ranks not arrived --, DistBackendError (mismatch,
// abort, or a peer that published a failure — mirrored with its kind), and
// DistBackendError "cancelled" when ShmGroup::cancelled is set: checked before
// arriving at a step and on every wake-up, so a cancelled op never proceeds to
// the writes of a step its peers completed after the cancel.
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/comm/backends/shm/shm_peers.hpp"
#include "runtime/comm/backends/shm/shm_segment.hpp"
#include "runtime/comm/backends/shm/shm_wait.hpp"
#include "runtime/comm/types.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::comm::shm {

// A function pointer and its argument (no allocation, unlike std::function).
struct Deferred {
  void (*fn)(void*) = nullptr;
  void* arg = nullptr;
  explicit operator bool() const { return fn != nullptr; }
  void operator()() const { fn(arg); }
};

// Group-wide state the collectives share (owned by ShmBackend).
struct ShmGroup {
  ShmSegment* segment = nullptr;
  ShmPeers* peers = nullptr;
  int rank = 0;
  int size = 1;
  std::string groupName;
  uint64_t step = 0;                       // this rank's arrived steps (collective thread only)
  std::atomic<bool>* aborted = nullptr;     // local abort request
  WaitPolicy wait;                          // Note [shm waiting]
  std::vector<OpDesc> descs;                // every rank's descriptor of the running op
  // Note [shm single copy]: every rank may read every peer's memory (decided
  // once, the same on every rank, when the group is created), and the
  // smallest operation (in the bytes ShmBackend counts for it: the same on
  // every rank) that takes the single-copy path; broadcast takes it only
  // with shm.single_copy=on.
  bool singleCopy = false;
  uint64_t singleCopyMinBytes = 0;
  // The same for the all-gathers, whose own rule pays at lower kernel rates
  // (Note [shm single copy]).
  bool singleCopyAllgathers = false;
  uint64_t singleCopyAllgathersMinBytes = 0;
  bool singleCopyBroadcast = false;
  std::vector<uint8_t> scratch;             // single-copy reads to reduce (grown once)
  // Set while an operation runs: its Work was failed from outside (Note [Work
  // failure and the caller's tensors]); the op stops before its next step.
  std::atomic<bool> cancelled{false};
  // monotonicNowNs() at which the running operation started (its Work's start;
  // 0 outside one): its ShmOps time their deadline from it, so the timeout
  // bounds the whole operation and costs no clock read of its own.
  int64_t opStartedNs = 0;
  // Note [Bookkeeping while the stamps travel]: run by the next sync once it
  // arrived, before it waits; cleared before it runs (collective thread only).
  Deferred afterArrival;
  // Note [Eager rooted operations] in shm_eager.hpp: the largest per-rank
  // operation that takes the eager path (0: none, or no outboxes), the
  // entries each rank has written as this rank counts them, how many of
  // its own are known to have been read, and each reader's mark on this
  // rank's outbox as last loaded (Note [Eager read marks]).
  uint64_t eagerMaxBytes = 0;
  std::vector<uint64_t> eagerWritten;
  uint64_t eagerConfirmed = 0;
  std::vector<uint64_t> eagerMarksSeen;
  // Set when the operation failing now found a mismatch its peers may not see
  // (ShmBackend then sets SegmentHeader::oneSidedMismatchRank).
  std::atomic<bool> oneSidedMismatch{false};
};

class ShmOp {
 public:
  // `equalBytes`: every rank must contribute the same number of bytes. The
  // deadline is `timeout` after group.opStartedNs (after now outside an
  // operation). `counts`: empty, or the bytes this rank sends to each rank
  // followed by the bytes it expects from each (2 * size() values): published
  // with the first step (mine.hasCounts must then be set) and checked against
  // the peers' before any data moves.
  ShmOp(ShmGroup& group, const OpDesc& mine, bool equalBytes, Milliseconds timeout,
        std::span<const uint64_t> counts = {});

  int rank() const { return g_.rank; }
  int size() const { return g_.size; }
  uint64_t slotBytes() const { return g_.segment->slotBytes(); }
  // Bytes per rank part when the slot is split in size() parts (64-byte aligned).
  uint64_t partBytes() const;
  // My slot for the step about to be taken.
  uint8_t* writeSlot();
  // Rank r's slot of the step last synced.
  const uint8_t* readSlot(int r);
  // Note [Small data in the descriptor line]: before the first sync of an
  // operation of one step, constructed with equalBytes, whose ranks each
  // write `bytes` at the start of writeSlot(): when `bytes` is at most
  // kDescSmallDataBytes, that step's writeSlot() and readSlot() address the
  // descriptor heads instead of the slots. Returns whether they do.
  bool carrySmallData(uint64_t bytes);
  // Where in every peer's slot this rank's reads of each step start (0 unless
  // set): the line the wait prefetches (Note [Fetching the slot while
  // waiting]). The parted algorithms read part rank() of every slot.
  void readsFrom(uint64_t offset) { readOffset_ = offset; }
  // Arrive and wait for every rank (see the Note).
  void sync();
  // Descriptors of the first step (valid after the first sync).
  const OpDesc& desc(int r) const { return g_.descs[r]; }
  // The most bytes any rank sends to any one rank (after the first sync of an
  // operation constructed with counts).
  uint64_t largestCount() const { return largestCount_; }

  // The single-copy path (Note [shm single copy]); valid after the first sync.
  // Copies `bytes` at `offset` into peer r's published buffer (desc(r).singleCopy.addr)
  // into `dst`. A failure raises the error of its cause: the peer died, the
  // peer published a failure, the op was cancelled, else DistBackendError.
  void readPeer(int r, uint64_t offset, void* dst, uint64_t bytes);
  // After a phase of reads: raises DistRanksPeerFailureError if a peer has
  // exited since (what was read may then not be its data).
  void confirmPeersAlive();
  // Raises the cancellation error if the op was failed from outside: called
  // between chunks of work that writes the caller's tensor without a sync.
  void throwIfCancelled() {
    if (cancelled()) throwCancelled();
  }
  // A per-group scratch buffer of at least `bytes` (allocated once).
  uint8_t* scratch(uint64_t bytes);

 private:
  void validate();
  // Checks the published counts (Note [Counts read in place] in shm_op.cpp);
  // returns the first disagreement, or "".
  std::string checkCounts(int parity);
  void poll();
  // Raises the mismatch when a rank that has not arrived at this step runs a
  // later operation (it skipped this one, or ran it on the eager path: Note
  // [Eager rooted operations] in shm_eager.hpp).
  void throwIfSkipped();
  // Ranks that have not arrived at the current step (Note [Who did not arrive]).
  std::vector<int> notArrived() const;
  bool cancelled() const { return g_.cancelled.load(std::memory_order_acquire); }
  [[noreturn]] void throwCancelled();
  [[noreturn]] void throwTimeout();
  [[noreturn]] void throwFailedRead(int r, int err);
  [[noreturn]] void throwExitedDuringRead(int r);
  std::string what() const;

  ShmGroup& g_;
  OpDesc mine_;
  std::span<const uint64_t> counts_;
  uint64_t largestCount_ = 0;
  uint64_t readOffset_ = 0;
  bool equalBytes_;
  bool first_ = true;
  bool smallDataNext_ = false;  // the step about to be taken carries its data in the head
  bool smallDataRead_ = false;  // the step last synced did
  Milliseconds timeout_;
  Deadline deadline_;
};

// "BROADCAST(seq 3, 16 bytes, float32, root 0, op SUM)": a descriptor in
// mismatch messages.
std::string describeOp(const OpDesc& d);

// Whether two ranks' descriptors describe the same operation (seq, type,
// dtype, reduce op, root; and bytes when `compareBytes`).
bool sameOperation(const OpDesc& a, const OpDesc& b, bool compareBytes);

// The deadline of an operation's waits: `timeout` after group.opStartedNs
// (after now outside an operation).
Deadline operationDeadline(const ShmGroup& group, Milliseconds timeout);

// Publishes in this rank's RankControl the operation it starts: the op type,
// then the seq, both release, so a peer that sees the seq sees the type and
// everything this rank did before (ShmOp::throwIfSkipped's and EagerOp's
// checks for a rank that skipped or ran another operation rely on it).
void announceOperation(ShmGroup& group, const OpDesc& mine);

// The error of an operation failed from outside the backend (Note [Work
// failure and the caller's tensors] in work.hpp); `what` names the operation.
[[noreturn]] void throwCancelledOp(const std::string& what);

// Mirrors a peer's published failure as the same exception kind; with
// `missing`, as the rank_errors.hpp kind naming those ranks.
[[noreturn]] void throwPeerFailure(ShmSegment& segment, int peer, const std::string& context,
                                   const std::vector<int>* missing = nullptr);

}  // namespace distlab::comm::shm
