#pragma once
// Point-to-point over the segment's channels (one ring per ordered rank pair).
//
// Note [shm point-to-point]
// A message is a 32-byte header (tag, size, per-peer seq) followed by the
// payload, streamed through the ring of (src, dst) as space allows, so any
// message size fits a bounded channel. One engine thread per rank moves all
// pending sends and receives a little at a time (never blocking on one), so
// isend/irecv in any order, send-to-self and batch_isend_irecv rings cannot
// deadlock. Receiving matches (source, tag) like MPI: a message that arrives
// before its recv is posted (or whose tag does not match the oldest posted
// recv) is drained into a heap buffer and delivered when a matching recv is
// posted; messages between one pair with one tag never overtake each other.
// recvAnysource takes the oldest matching message from any rank.
// A size mismatch fails the recv (naming both sizes) and discards the payload:
// memory is never overrun. Each op fails with DistTimeoutError at its deadline
// and with DistPeerFailureError when its peer exits (checked every ~50 ms).
// Every operation runs inside its Work's execution bracket (Note [Work
// failure and the caller's tensors] in work.hpp), opened when the engine takes
// it. A failure from outside (Work::abort, the watchdog) reaches the engine as
// a cancel request: a send not begun is withdrawn, one half written ends with
// zeros instead of the tensor's bytes (the receiver's framing stays intact),
// a receive not matched is withdrawn (its message goes to the next matching
// receive), one half read drops the rest of its message.
// Waiting: the engine sleeps on its rank's p2pBell (Note [shm waiting]); peers
// ring it when they write to or drain from its channels.
//
// Note [Finish after the ring]
// The engine finishes the Works a round completed (the caller's wait returns)
// only after it published every channel index the round moved and rang every
// peer it wrote to or drained. A send is complete once its bytes are in the
// channel, and its caller may exit at once: when it finished first, a sender
// that exited before its engine rang left the receiver asleep on a posted
// recv that never looked at the channel again (debug_watchdog_test lost a
// message in about one run of two hundred on a loaded 2-core machine). For a sender that
// dies between publishing and ringing (SIGKILL), the engine also rescans its
// channels after each idle poll interval (~50 ms) without a bell: a message
// that is in the channel is delivered, late, never stranded.
//
// Note [Waiting drives the engine]
// Handing every message to the engine thread costs thread hand-offs: the
// caller posts and rings its engine, which wakes, writes and rings the peer's
// engine, which wakes, reads and completes the Work, which wakes the peer's
// caller. Three futex wake-ups per message, each tens of us on a busy
// machine: a 32 B exchange between two ranks took 13-75 us where Open MPI,
// whose callers poll, takes 0.6 us. So a caller that waits for its send or
// receive of up to 32 KiB drives the engine itself (Work::wait's inline
// runner, Note [Waiting helps] in progress_thread.hpp): it runs the engine's
// rounds on its own thread while they move bytes, and while they do not for
// up to 20 us (plus the group's yield time, yielding, when ranks outnumber
// cores), and returns as soon as its Work completed; if it gives up first, it
// rings the engine thread, which carries on, and sleeps in Work::wait as
// before. It yields only after a round that moved nothing: yielding after one
// that did (its message written, a peer's read) handed the core to another
// rank just when its own completion was near, and four ranks on two cores of
// an AMD EPYC VM took 75-84 us per 8 B-4 KiB exchange instead of 28-40.
// The engine's state is guarded by one mutex that the engine thread
// takes around each round and a waiter only tries to take, so a round runs on
// one thread at a time, exactly as it would on the engine's; what a round completes may run callbacks on the waiter's thread,
// and a wait started from inside a round (a completion callback) does not
// drive again. The caller's Work is told apart by its address, which is its
// ticket: Work::wait runs on that Work, so it is alive while it drives.
//
// Note [A driven engine is not woken]
// While a caller drives its engine, the rank's engine thread usually sleeps on
// the bell with work in flight (the receive being waited for), so every
// message its peers wrote woke it: a futex wake-up and a context switch per
// message, on two cores shared by four ranks 6 switches per rank and exchange
// (perf stat), against a driver that would have read the message itself a
// moment later. So a peer that moved data to or from this rank bumps the bell
// but leaves out the wake-up while a thread of this rank drives
// (RankControl::p2pDrivers), and says so (p2pWakeSkipped). The last driver to
// stop settles it: it runs one more round (what the skipped wake-up would
// have made the engine do), and rings the engine thread only if that round
// moved bytes and work is still in flight: a round that moved nothing left
// only work that waits for a peer (a receive for its message, an in-place
// send for the receiver's count), and that peer's write rings the engine
// itself, as when no wake-up was skipped at all. Ringing it whenever work
// was in flight woke the engine thread once or twice per exchange for
// nothing: two ranks exchanging 256 KiB in place on a 2-core AMD EPYC VM
// made 2.3 context switches per exchange, 1.3 since (perf stat), and four
// ranks' 8-16 KiB exchanges there took 35-39 us instead of 57-65.
// Dekker on the two words: the peer sets p2pWakeSkipped and then
// re-reads p2pDrivers (waking the engine itself if it reads 0); the driver
// decrements p2pDrivers and then reads p2pWakeSkipped. Either the peer sees no
// driver or the driver sees the flag; a bell bump is never left without a
// round or a wake-up to act on it.
//
// Note [An idle engine is not woken for data]
// A peer that wrote to or drained from this rank's channels woke its engine
// thread whenever it slept, also when this rank had nothing posted: the
// message then waits in the channel for a receive this rank has not posted,
// and the space drained was for a send it no longer has. On a 2-core AMD EPYC
// VM, a 32 B exchange between two ranks (send to the next, receive from the
// previous, as the benchmark's send_recv row) made 0.7 futex calls per rank
// and exchange, most of them such wake-ups, each waking a thread that then
// contended for the engine's lock with the rank's own caller. So each rank
// publishes RankControl::p2pIdle: every round ends by setting it when nothing
// is posted or in flight (no send, receive, partly read message, in-place
// read or in-place send still read by its receiver; checked under mutex_,
// which every post takes) and clearing it
// otherwise, and every post clears it under mutex_ before its own round. A
// peer leaves out the wake-up of an idle rank, bumping the bell only, unless
// its message did not fit the channel (its sender needs the receiver to
// drain, even into an unexpected-message buffer: two ranks that both send
// large messages before receiving would deadlock otherwise). What it left
// in the channel is read by the post that gives the rank work: that post
// clears the flag, then its round reads the channels. Dekker on the flag and
// the channel index: a post stores the flag and then reads the tail (a fence
// between); a peer publishes the tail and then loads the flag (a fence
// between): either the post's round sees the message or the peer sees the
// rank busy and wakes it as before. A message stranded by a sender killed
// after publishing is found the same way, by the next post. A posting thread
// also counts as a driver (Note [A driven engine is not woken]) from before
// its push to the end of its round: in that window the rank is busy and no
// driver waits yet, and a peer's message arriving then woke the engine in
// 18-25 % of the benchmark's exchanges, for what the post's round, or the
// wait that follows, reads a moment later. Measured on that VM (50,000 and
// 100,000 exchanges of 32 B, two ranks): p50 5.5 -> 2.7 us, mean 11-13 ->
// 3.2-3.3 us, futex calls per 100,000 exchanges 143,000 -> 29,000-39,000.
//
// Note [Posting drives a round]
// Waking the engine at every post cost most of what was left: a 32 B
// exchange between two ranks took ~10 us with the waiter driving, ~3 us
// without the posts' wake-ups. So the posting thread runs one round itself
// (when no other thread runs one): a send that fits the channel is written
// and complete before isend returns, and the engine is rung only for a send
// that is not. A receive does not ring it: the message's arrival rings the
// engine (its sender always rings the receiver), and a waiter that stops
// driving rings it so that it polls the receive's deadline and peer. A
// receive nobody waits for, posted while the engine slept with nothing in
// flight, has its failures noticed at the engine's next wake-up (at most the
// idle sleep, Note [Idle p2p engine]), not within the poll interval.
//
// Note [A small message without the engine]
// Even driven by the caller (the Notes above), a message went through the
// engine's bookkeeping twice: a Send or Recv record, the posted queue and its
// lock, the execution bracket with its cancel callback, a round over every
// channel, the finished list. On a 2-core AMD EPYC VM, a 32 B exchange between
// two ranks (isend to the next, irecv from the previous, wait) spent 0.55 us
// in isend and 1.1-1.3 us in irecv, where the whole exchange costs Open MPI
// 0.2-0.6 us. So a send of up to kDrivenBytes whose whole message fits the
// channel now, with nothing of this rank's queued before it, is written by
// the caller at once (header, payload, tail, the peer rung) and its Work
// completed before isend returns; and a receive of up to kDrivenBytes from
// one source whose whole message is already first in that channel, matching
// its tag and size, is read at once and completed before irecv returns.
// Either needs the engine's lock without waiting (no round runs elsewhere)
// and nothing the engine holds that could be owed this message first: for a
// send, no send posted or queued before it; for a receive, no receive posted
// or waiting, no unexpected message and no message from that source half
// read. Anything else (a message in place, another tag first in the channel,
// a size mismatch to report, a failing or stopping engine) takes the path
// above, unchanged. The Work is completed as an unshared one (Note [Unshared
// execution] in work.hpp): ShmBackend made it for this call and nobody else
// holds it yet, so nothing from outside can cancel it meanwhile. Measured on
// that VM (`distlab bench collectives --ops send_recv`, world 2): 32 B
// 1.15 -> 0.59 us, 4 KiB 1.63 -> 0.82 us, 16 KiB 2.17 -> 1.19 us.
//
// Note [Idle p2p engine]
// An engine with nothing in flight (no send or receive of its own pending, no
// message half read) has nothing to poll for: every event that gives it work
// rings its bell (a post, a peer's message, failAll, stop). It sleeps on the
// bell then, not in poll-interval slices: a rank that only runs collectives
// (or waits in one for a hung peer) would otherwise wake its engine ~40 times
// a second for nothing. A message stranded by a sender killed between
// publishing and ringing is found when this rank next posts anything (the
// post rings its own bell and the engine scans every channel). The sleep
// still ends, so no wait is unbounded: after 1 s, or in a wide group one
// second per 16 ranks up to 10 s (each wake-up scans the group's n channels,
// and n ranks doing so every second cost the group n^2 reads a second).
//
// Note [Point-to-point in place]
// Streamed through the 64 KiB ring, a message costs two copies (the sender's
// in, the receiver's out) and, beyond a quarter of the ring, a hand-off per
// piece to an engine thread (Note [Waiting drives the engine]), each a
// wake-up when it sleeps: in two runs on a 2-core AMD EPYC VM, exchanges
// between two ranks took 1.5-4.6x Open MPI's time at 1-16 MiB and 2.0-8.7x
// at 64-512 KiB, whose ranks read each other's buffers with cross-memory
// attach (Note [shm single copy] in shm_single_copy.hpp). So a message to
// another rank larger than the ones a waiting caller streams itself
// (kDrivenBytes, 32 KiB) goes in place, as MPI's rendezvous does, in a group
// where every rank may read its peers' memory (option shm.single_copy not
// off, no read refused, not a wide group's verdict), whether or not the
// collectives' rates said the path pays: those weigh one copy against two,
// where the stream's cost is its hand-offs (figures:
// reports/collectives_all_ops.md, whose AMD EPYC VM keeps the collectives on
// the slots). With more ranks than cores the line lies at 4 KiB
// (kOversubscribedStreamBytes): a streamed message there waits for hand-offs
// between ranks that wait for a core, where in place a header and one read
// suffice; four ranks on two cores of an AMD EPYC VM, exchanges of 8 KiB took
// 62-65 us in place against 75-91 us streamed, 16 KiB 47-54 against 101-131,
// 32 KiB 57-71 against 143-187 (at two ranks, in place cost 9.1-10.2 us
// against 1.9-3.7 streamed at 8-32 KiB). The sender writes only a header
// carrying its buffer's address.
// The receiver matches it like any message; once a receive is posted for it
// (until then it waits among the unexpected messages, unread: reading it
// into a buffer would cost the copy saved, and a fresh buffer's page
// faults), it reads the payload from the sender's memory
// (process_vm_readv) straight into the receive, kInPlaceChunkBytes per round,
// then counts the message done in the channel (`inPlaceDone`) and rings the
// sender. The send completes on that count: until then its tensor is read.
// Messages behind it in the ring flow on (a receive posted for a later
// message must not wait for one posted later still), but a channel has at
// most one in-place message outstanding: a large send behind it streams.
// A send that fails or is cancelled while its header is out withdraws the
// message before its Work finishes (after which the caller may free the
// tensor): it stores the message's number in `inPlaceRevoked`. The receiver
// loads that word after every chunk it read; from the first chunk read after
// the withdrawal (whose bytes may be stale) on, the message is zeros -- what a
// streamed send cut short delivers -- and it is counted done as any other.
// Messages are numbered per channel from 1 on both sides, and a message is
// withdrawn only while it is the outstanding one, so for an uncounted message
// k, `inPlaceRevoked >= k` means k was withdrawn: a later number went out only
// after k was counted or withdrawn. The receiver publishes the largest number
// it counted (reads may end out of order). A read that fails (ESRCH: the
// sender exited; EFAULT) fails the receive, naming the sender.
#include <atomic>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/comm/backends/shm/shm_peers.hpp"
#include "runtime/comm/backends/shm/shm_segment.hpp"
#include "runtime/comm/backends/shm/shm_wait.hpp"
#include "runtime/comm/progress_thread.hpp"
#include "runtime/comm/work.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::comm::shm {

class ShmP2P {
 public:
  // `onFailure(error, kind)` runs (on the engine thread, or a waiter driving
  // it) when an op fails; the backend uses it to mark the group broken.
  // `wait`: how long a waiting caller drives the engine without progress
  // (Note [Waiting drives the engine]).
  using FailureFn = std::function<void(std::exception_ptr, FailureKind)>;
  // `inPlace`: whether every rank may read its peers' memory (Note
  // [Point-to-point in place]).
  ShmP2P(ShmSegment& segment, ShmPeers& peers, std::string groupName, FailureFn onFailure,
         WaitPolicy wait, bool inPlace);
  ~ShmP2P();  // stop()
  ShmP2P(const ShmP2P&) = delete;
  ShmP2P& operator=(const ShmP2P&) = delete;

  // `work` is the send's own, not yet returned to its caller (Note [Unshared
  // execution] in work.hpp): a small send may complete it before this returns
  // (Note [A small message without the engine]).
  void postSend(WorkPtr work, const Tensor& tensor, int dst, int tag, uint64_t seq,
                Milliseconds timeout);
  // src == -1: any source. `work` as postSend's (Note [A small message
  // without the engine]).
  void postRecv(WorkPtr work, const Tensor& tensor, int src, int tag, Milliseconds timeout);
  // Fails every pending op with `reason` (DistBackendError).
  void failAll(const std::string& reason);
  void stop();

 private:
  struct Send;
  struct MsgHeader;
  struct Recv;
  struct Incoming;
  struct Unexpected;
  struct InPlaceRead;
  class Waiter;
  // Counts this thread among the rank's drivers while it lives (Note [A
  // driven engine is not woken]); its end runs stopDriving().
  class DriverScope {
   public:
    explicit DriverScope(ShmP2P& p2p);
    ~DriverScope();
    DriverScope(const DriverScope&) = delete;
    DriverScope& operator=(const DriverScope&) = delete;

   private:
    ShmP2P& p2p_;
  };

  // Note [Waiting drives the engine]: rounds on the caller's thread until
  // `work` completed (true) or the spin time passed without progress.
  bool driveUntilDone(const Work& work);
  // Note [A small message without the engine]: writes the whole message into
  // the channel, or reads one whole from it, and completes `work` when that
  // needs no engine; false otherwise (nothing done).
  // Their common condition: a message of `bytes` may (no round on this
  // thread, the engine neither failing nor stopping).
  bool mayMoveAtOnce(uint64_t bytes) const;
  bool trySendAtOnce(Work& work, const Tensor& tensor, int dst, int tag, uint64_t seq);
  bool tryRecvAtOnce(Work& work, const Tensor& tensor, int src, int tag);
  // One engine round on this thread, unless another thread runs one or this
  // thread is inside one; returns whether it ran (and whether it moved bytes).
  bool driveRound(bool* moved = nullptr);
  // Makes Work::wait on `work` drive the engine (a message of at most
  // kDrivenBytes; the larger ones stream with the engine thread alone).
  void driveWhenWaited(Work& work);
  void loop();
  bool progress();
  bool nothingInFlight() const;  // Note [Idle p2p engine]
  void sleepUntilRung(uint32_t seen);
  bool progressSends();
  bool progressIncoming(int src);
  // Note [Point-to-point in place]: whether a send of `bytes` to `dst` goes
  // in place; the receiver's next chunk of the message being read from
  // `src`; what ends every message read from `src`.
  bool inPlaceFor(uint64_t bytes, int dst) const;
  // Note [Point-to-point in place]: a header that came through the ring, a
  // read starting (a size mismatch fails `recv` and counts it done), a chunk
  // of each read, the receiver's count, the sender's withdrawal.
  void acceptInPlaceHeader(int src, const MsgHeader& h);
  void startInPlaceRead(int src, int tag, uint64_t bytes, uint64_t addr, uint64_t number,
                        std::shared_ptr<Recv> recv);
  bool progressInPlaceReads();
  void countInPlaceDone(int src, uint64_t number);
  void revokeInPlace(const Send& s);
  std::exception_ptr sizeMismatch(int src, int tag, uint64_t expects, uint64_t has) const;
  // Fails the in-place sends still read and the receives being read.
  void failInPlace(const std::exception_ptr& e);
  void checkFailures();
  void acceptPosted();
  // Called inside a Work's lock (its cancel callback): queues the request and
  // wakes the engine, nothing more.
  void requestCancel(std::weak_ptr<Work> work);
  // Engine thread: withdraws or cuts short the operations of the queued
  // cancel requests, then finishes them (their deferred failure wins).
  void applyCancels();
  bool matchUnexpected(const std::shared_ptr<Recv>& recv);
  void deliver(Unexpected& u, const std::shared_ptr<Recv>& recv);
  void fail(const std::shared_ptr<Send>& s, std::exception_ptr e);
  void fail(const std::shared_ptr<Recv>& r, std::exception_ptr e);
  void complete(const std::shared_ptr<Recv>& r, int src);
  void finishDone();  // finishes what complete() and fail() queued
  void ringPeer(int peer);
  // After moving data to or from `peer`: ringPeer unless one of its threads
  // drives its engine (Note [A driven engine is not woken]), or its engine is
  // idle and `drainNeeded` is false (Note [An idle engine is not woken for
  // data]: a sender whose message did not fit sets it).
  void ringPeerAfterData(int peer, bool drainNeeded = false);
  // Note [An idle engine is not woken for data]: a post clears this rank's
  // p2pIdle (under mutex_); the end of every round sets it when nothing is
  // posted or in flight, and clears it otherwise.
  void leaveIdle();
  void publishIdle();
  // A driver stops (the same Note): settles a wake-up left out meanwhile.
  void stopDriving();
  std::string what() const;

  ShmSegment& seg_;
  ShmPeers& peers_;
  std::string groupName_;
  FailureFn onFailure_;
  int rank_;
  int size_;

  std::mutex mutex_;
  std::vector<std::shared_ptr<Send>> postedSends_;  // GUARDED_BY(mutex_)
  std::vector<std::shared_ptr<Recv>> postedRecvs_;  // GUARDED_BY(mutex_)
  std::string failReason_;                           // GUARDED_BY(mutex_)
  std::vector<std::weak_ptr<Work>> cancelRequests_;  // GUARDED_BY(mutex_)
  std::atomic<bool> cancelPending_{false};
  std::atomic<bool> failing_{false};
  std::atomic<bool> stopping_{false};
  WaitPolicy wait_;
  uint64_t inPlaceMinBytes_;  // 0: never (Note [Point-to-point in place])
  std::shared_ptr<Waiter> waiter_;  // the posted Works' inline runner

  // Engine state: the engine thread's, or a driving waiter's, under engineMutex_.
  std::mutex engineMutex_;
  std::vector<std::deque<std::shared_ptr<Send>>> sends_;  // per dst, FIFO
  std::list<std::shared_ptr<Recv>> recvs_;                // unmatched, in post order
  std::vector<std::unique_ptr<Incoming>> incoming_;       // per src: message being read
  // Note [Point-to-point in place]: per dst, the in-place send its receiver
  // still reads, and how many headers went out; per src, how many came in and
  // the largest number counted done; the reads in progress.
  std::vector<std::shared_ptr<Send>> inPlaceOut_;
  std::vector<uint64_t> inPlaceWritten_;
  std::vector<uint64_t> inPlaceArrived_;
  std::vector<uint64_t> inPlaceDone_;
  std::list<InPlaceRead> reading_;
  std::list<Unexpected> unexpected_;                      // in arrival order
  std::vector<std::pair<WorkPtr, std::exception_ptr>> finished_;  // to finish after the ring
  uint64_t arrivals_ = 0;
  int64_t lastPollNs_ = 0;
  std::thread thread_;
};

}  // namespace distlab::comm::shm
