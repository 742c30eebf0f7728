#include "runtime/comm/backends/shm/shm_p2p.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "runtime/comm/backends/shm/shm_op.hpp"
#include "runtime/comm/backends/shm/shm_p2p_records.hpp"
#include "runtime/comm/backends/shm/shm_wait.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm::shm {

using p2p::kInPlaceMagic;
using p2p::kMsgMagic;
using p2p::ringRead;
using p2p::ringWrite;
using p2p::ringZero;

namespace {

// Note [Waiting drives the engine]: the messages whose callers drive the
// engine, and how long a waiter keeps driving without progress when every
// rank has a core. A message larger than half the 64 KiB channel streams
// through it in pieces, each waiting for the peer to drain the last: driven
// by both callers while both engines also ran, 1-16 MiB exchanges took
// 1.7-2.4 times as long as with the engines alone, so they keep the engine
// threads, or go in place (Note [Point-to-point in place]). Up to half the
// channel a message usually fits whole, written and read at once (Note [A
// small message without the engine]): at 32 KiB that took 3.8-5.1 us where
// the read in place took 12-15 us (world 2, AMD EPYC VM, one window), so the
// line lies at 32 KiB, not at the quarter (16 KiB) it lay at before.
constexpr uint64_t kDrivenBytes = 32 * 1024;
// Note [Point-to-point in place]: with more ranks than cores, the smallest
// message that streams no more (4 KiB streams; 4 KiB + 1 goes in place).
constexpr uint64_t kOversubscribedStreamBytes = 4 * 1024;

// The smallest message that goes in place, for a group whose waits follow
// `wait` (Note [Point-to-point in place]); 0 when none does.
uint64_t inPlaceLine(bool inPlace, const WaitPolicy& wait) {
  if (!inPlace) return 0;
  const bool oversubscribed = wait.yieldNs > 0;  // waitPolicyFor's sign of it
  return (oversubscribed ? kOversubscribedStreamBytes : kDrivenBytes) + 1;
}
constexpr int64_t kP2PSpinNs = 20'000;

// The engine whose round runs on this thread (Note [Waiting drives the
// engine]): a wait started from inside a round does not drive it again.
thread_local const ShmP2P* tDriving = nullptr;

class DrivingScope {
 public:
  explicit DrivingScope(const ShmP2P* p2p) : previous_(std::exchange(tDriving, p2p)) {}
  ~DrivingScope() { tDriving = previous_; }
  DrivingScope(const DrivingScope&) = delete;
  DrivingScope& operator=(const DrivingScope&) = delete;

 private:
  const ShmP2P* previous_;
};

}  // namespace

// Note [Waiting drives the engine]: Work::wait's runner for posted sends and
// receives; detached (drives nothing) once the engine stops.
class ShmP2P::Waiter final : public InlineRunner {
 public:
  explicit Waiter(ShmP2P* p2p) : p2p_(p2p) {}
  bool runIfNext(uint64_t ticket) override {
    // A wait from a completion callback of a round (on this thread) does not
    // drive: this thread may hold the runner and the round's engine already.
    if (tDriving != nullptr) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    return p2p_ != nullptr && p2p_->driveUntilDone(*reinterpret_cast<const Work*>(ticket));
  }
  void detach() {
    std::lock_guard<std::mutex> lock(mutex_);
    p2p_ = nullptr;
  }

 private:
  std::mutex mutex_;
  ShmP2P* p2p_;  // GUARDED_BY(mutex_)
};

ShmP2P::ShmP2P(ShmSegment& segment, ShmPeers& peers, std::string groupName, FailureFn onFailure,
               WaitPolicy wait, bool inPlace)
    : seg_(segment),
      peers_(peers),
      groupName_(std::move(groupName)),
      onFailure_(std::move(onFailure)),
      rank_(segment.rank()),
      size_(segment.size()),
      wait_(wait),
      inPlaceMinBytes_(inPlaceLine(inPlace, wait)),
      waiter_(std::make_shared<Waiter>(this)) {
  static_assert(sizeof(MsgHeader) == 32, "a message header is four 8-byte words in the ring");
  sends_.resize(size_);
  incoming_.resize(size_);
  inPlaceOut_.resize(size_);
  inPlaceWritten_.assign(size_, 0);
  inPlaceArrived_.assign(size_, 0);
  inPlaceDone_.assign(size_, 0);
  thread_ = std::thread([this] { loop(); });
}

ShmP2P::~ShmP2P() { stop(); }

std::string ShmP2P::what() const {
  return fmt::format("[shm] group '{}' rank {}", groupName_, rank_);
}

void ShmP2P::ringPeer(int peer) {
  RankControl& c = seg_.control(peer);
  ringAlways(c.p2pBell, c.p2pSleepers);
}

void ShmP2P::ringPeerAfterData(int peer, bool drainNeeded) {
  RankControl& c = seg_.control(peer);
  c.p2pBell.fetch_add(1, std::memory_order_seq_cst);
  if (c.p2pSleepers.load(std::memory_order_seq_cst) == 0) return;
  // Note [An idle engine is not woken for data]: the fence pairs with the
  // one after a post clears the flag.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!drainNeeded && c.p2pIdle.load(std::memory_order_seq_cst) != 0) return;
  if (c.p2pDrivers.load(std::memory_order_seq_cst) > 0) {
    c.p2pWakeSkipped.store(1, std::memory_order_seq_cst);
    if (c.p2pDrivers.load(std::memory_order_seq_cst) > 0) return;  // its last driver settles it
  }
  futexWakeAll(&c.p2pBell);
}

ShmP2P::DriverScope::DriverScope(ShmP2P& p2p) : p2p_(p2p) {
  p2p_.seg_.control(p2p_.rank_).p2pDrivers.fetch_add(1, std::memory_order_seq_cst);
}

ShmP2P::DriverScope::~DriverScope() { p2p_.stopDriving(); }

void ShmP2P::stopDriving() {
  RankControl& me = seg_.control(rank_);
  if (me.p2pDrivers.fetch_sub(1, std::memory_order_seq_cst) != 1) return;  // not the last
  if (me.p2pWakeSkipped.exchange(0, std::memory_order_seq_cst) == 0) return;
  bool engineHasWork = true;
  // A post from inside a round's callbacks already holds the engine's lock.
  if (tDriving != this && engineMutex_.try_lock()) {
    std::lock_guard<std::mutex> lock(engineMutex_, std::adopt_lock);
    DrivingScope driving(this);
    try {  // runs in a destructor: what a round raises is left to the engine thread
      // Note [A driven engine is not woken]: what waits for a peer's next
      // write is woken by that write.
      engineHasWork = progress() && !nothingInFlight();
    } catch (...) {
    }
  }
  // The engine thread acts on what is left (a busy engine sees the bumped bell).
  if (engineHasWork) ringPeer(rank_);
}

bool ShmP2P::mayMoveAtOnce(uint64_t bytes) const {
  return bytes <= kDrivenBytes && tDriving != this && !failing_.load(std::memory_order_acquire) &&
         !stopping_.load(std::memory_order_acquire);
}

bool ShmP2P::trySendAtOnce(Work& work, const Tensor& tensor, int dst, int tag, uint64_t seq) {
  const uint64_t bytes = tensor.nbytes();
  if (!mayMoveAtOnce(bytes) || inPlaceFor(bytes, dst)) return false;
  std::unique_lock<std::mutex> engine(engineMutex_, std::try_to_lock);
  if (!engine.owns_lock() || !sends_[dst].empty()) return false;
  {
    // A send this rank posted earlier that no round has taken yet goes first.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!postedSends_.empty()) return false;
  }
  ChannelHeader& ch = seg_.channel(rank_, dst);
  const uint64_t cap = seg_.channelBytes();
  uint64_t tail = ch.tail.load(std::memory_order_relaxed);
  const uint64_t head = ch.head.load(std::memory_order_acquire);
  if (cap - (tail - head) < sizeof(MsgHeader) + bytes) return false;
  WorkCompletion::startUnshared(work, monotonicNowNs());
  uint8_t* data = seg_.channelData(rank_, dst);
  const MsgHeader h{kMsgMagic, tag, bytes, seq, 0};
  ringWrite(data, cap, tail, reinterpret_cast<const uint8_t*>(&h), sizeof h);
  ringWrite(data, cap, tail + sizeof h, static_cast<const uint8_t*>(tensor.rawData()), bytes);
  ch.tail.store(tail + sizeof h + bytes, std::memory_order_release);
  ringPeerAfterData(dst);
  WorkCompletion::finishUnshared(work, nullptr);  // after the ring: Note [Finish after the ring]
  return true;
}

void ShmP2P::postSend(WorkPtr work, const Tensor& tensor, int dst, int tag, uint64_t seq,
                      Milliseconds timeout) {
  if (trySendAtOnce(*work, tensor, dst, tag, seq)) return;
  auto s = std::make_shared<Send>(Send{work, tensor, static_cast<const uint8_t*>(tensor.rawData()),
                                       tensor.nbytes(), dst, tag, seq, timeout,
                                       Deadline::after(timeout)});
  s->inPlace = inPlaceFor(s->bytes, dst);
  const bool small = s->bytes <= kDrivenBytes;
  const bool inPlace = s->inPlace;
  if (small || inPlace) driveWhenWaited(*work);
  DriverScope posting(*this);  // Note [An idle engine is not woken for data]
  {
    std::lock_guard<std::mutex> lock(mutex_);
    postedSends_.push_back(std::move(s));
    leaveIdle();
  }
  // Note [Posting drives a round]: the engine is woken only for what is left.
  // An in-place send's header is out after the round (else the receiver's
  // drain rings the engine), and the receiver's count rings it.
  if (inPlace) {
    if (!driveRound()) ringPeer(rank_);
  } else if (!small || !driveRound() || !work->isCompleted()) {
    ringPeer(rank_);
  }
}

bool ShmP2P::tryRecvAtOnce(Work& work, const Tensor& tensor, int src, int tag) {
  const uint64_t bytes = tensor.nbytes();
  if (src < 0 || !mayMoveAtOnce(bytes)) return false;
  std::unique_lock<std::mutex> engine(engineMutex_, std::try_to_lock);
  // Anything the engine holds may be owed this message first (an earlier
  // receive, a message from `src` that arrived earlier, one half read).
  if (!engine.owns_lock() || !recvs_.empty() || !unexpected_.empty() || incoming_[src]) {
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!postedRecvs_.empty()) return false;
  }
  ChannelHeader& ch = seg_.channel(src, rank_);
  const uint64_t tail = ch.tail.load(std::memory_order_acquire);
  const uint64_t head = ch.head.load(std::memory_order_relaxed);
  if (tail - head < sizeof(MsgHeader) + bytes) return false;
  const uint64_t cap = seg_.channelBytes();
  const uint8_t* data = seg_.channelData(src, rank_);
  MsgHeader h{};
  ringRead(data, cap, head, reinterpret_cast<uint8_t*>(&h), sizeof h);
  // Another kind of message, another tag or a size mismatch: the engine's
  // matching handles it (and names the mismatch).
  if (h.magic != kMsgMagic || h.tag != tag || h.bytes != bytes) return false;
  WorkCompletion::startUnshared(work, monotonicNowNs());
  ringRead(data, cap, head + sizeof h, static_cast<uint8_t*>(tensor.rawData()), bytes);
  ch.head.store(head + sizeof h + bytes, std::memory_order_release);
  ringPeerAfterData(src);
  WorkCompletion::setSourceRank(work, src);
  WorkCompletion::finishUnshared(work, nullptr);
  return true;
}

void ShmP2P::postRecv(WorkPtr work, const Tensor& tensor, int src, int tag, Milliseconds timeout) {
  if (tryRecvAtOnce(*work, tensor, src, tag)) return;
  auto r = std::make_shared<Recv>(Recv{work, tensor, static_cast<uint8_t*>(tensor.rawData()),
                                       tensor.nbytes(), src, tag, timeout,
                                       Deadline::after(timeout)});
  // A message that may come in place is read by whoever runs the round: the
  // waiter drives it too (Note [Point-to-point in place]).
  const bool small = r->bytes <= kDrivenBytes || inPlaceFor(r->bytes, -1);
  if (small) driveWhenWaited(*work);
  DriverScope posting(*this);  // Note [An idle engine is not woken for data]
  {
    std::lock_guard<std::mutex> lock(mutex_);
    postedRecvs_.push_back(std::move(r));
    leaveIdle();
  }
  // Note [Posting drives a round]: its message's arrival rings the engine.
  if (!small || !driveRound()) ringPeer(rank_);
}

void ShmP2P::failAll(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  failReason_ = reason;
  failing_.store(true, std::memory_order_release);
  ringPeer(rank_);
}

void ShmP2P::stop() {
  waiter_->detach();  // waits for a caller driving a round to finish it
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_release);
  ringPeer(rank_);
  thread_.join();
  // A post racing with the shutdown may still be in a round of its own.
  std::lock_guard<std::mutex> lock(engineMutex_);
  DrivingScope driving(this);
  auto e = std::make_exception_ptr(DistBackendError(what() + ": point-to-point engine shut down"));
  acceptPosted();
  for (auto& q : sends_) {
    for (auto& s : q) fail(s, e);
    q.clear();
  }
  for (auto& r : recvs_) fail(r, e);
  recvs_.clear();
  for (auto& in : incoming_) {
    if (in && in->target) fail(in->target, e);
  }
  for (auto& u : unexpected_) {
    if (u.claimedBy) fail(u.claimedBy, e);
  }
  failInPlace(e);
  finishDone();  // and a recv that acceptPosted() matched to a complete message
}

void ShmP2P::acceptPosted() {
  std::vector<std::shared_ptr<Send>> sends;
  std::vector<std::shared_ptr<Recv>> recvs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sends.swap(postedSends_);
    recvs.swap(postedRecvs_);
  }
  // Note [Work failure and the caller's tensors]: the bracket opens as the
  // engine takes the operation; a Work failed before that never starts.
  auto cancel = [this](const WorkPtr& work) {
    return [this, w = std::weak_ptr<Work>(work)](std::exception_ptr) { requestCancel(w); };
  };
  for (auto& s : sends) {
    if (!WorkCompletion::beginExecution(*s->work, cancel(s->work))) continue;
    sends_[s->dst].push_back(std::move(s));
  }
  for (auto& r : recvs) {
    if (!WorkCompletion::beginExecution(*r->work, cancel(r->work))) continue;
    if (!matchUnexpected(r)) recvs_.push_back(std::move(r));
  }
}

void ShmP2P::requestCancel(std::weak_ptr<Work> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelRequests_.push_back(std::move(work));
  }
  cancelPending_.store(true, std::memory_order_release);
  ringPeer(rank_);
}

void ShmP2P::applyCancels() {
  std::vector<std::weak_ptr<Work>> requests;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    requests.swap(cancelRequests_);
    cancelPending_.store(false, std::memory_order_relaxed);
  }
  // Held, so no address here can be reused by a new Work meanwhile; one that
  // is gone already finished.
  std::vector<WorkPtr> works;
  for (auto& r : requests) {
    if (WorkPtr w = r.lock()) works.push_back(std::move(w));
  }
  auto cancelled = [&](const WorkPtr& w) {
    return std::find(works.begin(), works.end(), w) != works.end();
  };
  // Each ends with no error of its own: endExecution publishes the failure
  // that cancelled it.
  for (auto& q : sends_) {
    for (auto it = q.begin(); it != q.end();) {
      Send& s = **it;
      if (!cancelled(s.work) || s.cancelled) {
        ++it;
      } else if (!s.headerDone) {  // nothing written yet: the message is withdrawn
        finished_.emplace_back(s.work, nullptr);
        it = q.erase(it);
      } else {  // its header is out: the rest follows as zeros, its tensor unread
        s.cancelled = true;
        finished_.emplace_back(s.work, nullptr);
        ++it;
      }
    }
  }
  for (auto it = recvs_.begin(); it != recvs_.end();) {
    if (!cancelled((*it)->work)) {
      ++it;
      continue;
    }
    finished_.emplace_back((*it)->work, nullptr);
    it = recvs_.erase(it);  // its message, when it comes, waits for the next receive
  }
  for (auto& in : incoming_) {
    if (in && in->target && cancelled(in->target->work)) {
      finished_.emplace_back(in->target->work, nullptr);
      in->target = nullptr;
      in->discard = true;  // the rest of the message is read and dropped
    }
  }
  for (auto& u : unexpected_) {
    if (u.claimedBy && cancelled(u.claimedBy->work)) {
      finished_.emplace_back(u.claimedBy->work, nullptr);
      u.claimedBy = nullptr;  // the message waits for the next receive
    }
  }
  for (auto& out : inPlaceOut_) {  // its receiver may be reading it: withdrawn first
    if (out && cancelled(out->work)) {
      revokeInPlace(*out);
      finished_.emplace_back(out->work, nullptr);
      out = nullptr;
    }
  }
  for (auto& r : reading_) {
    if (r.target && cancelled(r.target->work)) {
      finished_.emplace_back(r.target->work, nullptr);
      r.target = nullptr;  // the rest of the message is skipped
    }
  }
}

bool ShmP2P::matchUnexpected(const std::shared_ptr<Recv>& recv) {
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    Unexpected& u = *it;
    if (u.claimedBy || u.tag != recv->tag || (recv->src >= 0 && u.src != recv->src)) continue;
    if (u.inPlaceNumber != 0) {
      startInPlaceRead(u.src, u.tag, u.inPlaceBytes, u.inPlaceAddr, u.inPlaceNumber, recv);
      unexpected_.erase(it);
      return true;
    }
    if (!u.complete) {
      u.claimedBy = recv;
      return true;
    }
    deliver(u, recv);
    unexpected_.erase(it);
    return true;
  }
  return false;
}

std::exception_ptr ShmP2P::sizeMismatch(int src, int tag, uint64_t expects,
                                         uint64_t has) const {
  return std::make_exception_ptr(DistBackendError(
      fmt::format("{}: recv from rank {} (tag {}) expects {} bytes, but the message has {} bytes",
                  what(), src, tag, expects, has)));
}

void ShmP2P::deliver(Unexpected& u, const std::shared_ptr<Recv>& recv) {
  if (u.data.size() != recv->bytes) {
    fail(recv, sizeMismatch(u.src, u.tag, recv->bytes, u.data.size()));
    return;
  }
  if (!u.data.empty()) std::memcpy(recv->data, u.data.data(), u.data.size());
  complete(recv, u.src);
}

void ShmP2P::complete(const std::shared_ptr<Recv>& r, int src) {
  WorkCompletion::setSourceRank(*r->work, src);
  finished_.emplace_back(r->work, nullptr);
}

void ShmP2P::fail(const std::shared_ptr<Send>& s, std::exception_ptr e) {
  revokeInPlace(*s);  // before its caller may free the tensor
  finished_.emplace_back(s->work, std::move(e));
}
void ShmP2P::fail(const std::shared_ptr<Recv>& r, std::exception_ptr e) {
  finished_.emplace_back(r->work, std::move(e));
}

void ShmP2P::finishDone() {
  // Note [Finish after the ring]: every index this round moved is published
  // and every peer rung before a caller learns its op is done.
  for (auto& [work, error] : finished_) WorkCompletion::endExecution(*work, std::move(error));
  finished_.clear();
}

bool ShmP2P::progressSends() {
  bool moved = false;
  const uint64_t cap = seg_.channelBytes();
  for (int dst = 0; dst < size_; ++dst) {
    ChannelHeader& ch = seg_.channel(rank_, dst);
    auto& out = inPlaceOut_[dst];
    if (out && ch.inPlaceDone.load(std::memory_order_acquire) >= out->inPlaceNumber) {
      finished_.emplace_back(out->work, nullptr);  // its receiver has read it
      out = nullptr;
      moved = true;
    }
    auto& queue = sends_[dst];
    if (queue.empty()) continue;
    uint8_t* data = seg_.channelData(rank_, dst);
    uint64_t tail = ch.tail.load(std::memory_order_relaxed);
    const uint64_t head = ch.head.load(std::memory_order_acquire);
    bool wrote = false;
    while (!queue.empty()) {
      Send& s = *queue.front();
      uint64_t space = cap - (tail - head);
      if (s.inPlace && out) s.inPlace = false;  // one outstanding per channel: this one streams
      if (s.inPlace) {
        if (space < sizeof(MsgHeader)) break;
        MsgHeader h{kInPlaceMagic, s.tag, s.bytes, s.seq, reinterpret_cast<uint64_t>(s.data)};
        ringWrite(data, cap, tail, reinterpret_cast<const uint8_t*>(&h), sizeof h);
        tail += sizeof h;
        s.headerDone = wrote = true;
        s.inPlaceNumber = ++inPlaceWritten_[dst];
        out = std::move(queue.front());  // completes when its receiver counts it
        queue.pop_front();
        continue;
      }
      if (!s.headerDone) {
        if (space < sizeof(MsgHeader)) break;
        MsgHeader h{kMsgMagic, s.tag, s.bytes, s.seq, 0};
        ringWrite(data, cap, tail, reinterpret_cast<const uint8_t*>(&h), sizeof h);
        tail += sizeof h;
        space -= sizeof h;
        s.headerDone = true;
        wrote = true;
      }
      const uint64_t n = std::min(space, s.bytes - s.sent);
      if (n > 0) {
        if (s.cancelled) {
          ringZero(data, cap, tail, n);
        } else {
          ringWrite(data, cap, tail, s.data + s.sent, n);
        }
        tail += n;
        s.sent += n;
        wrote = true;
      }
      if (s.sent < s.bytes) break;
      finished_.emplace_back(s.work, nullptr);
      queue.pop_front();
    }
    if (wrote) {
      ch.tail.store(tail, std::memory_order_release);
      ringPeerAfterData(dst, /*drainNeeded=*/!queue.empty());
      moved = true;
    }
  }
  return moved;
}

bool ShmP2P::progressIncoming(int src) {
  const uint64_t cap = seg_.channelBytes();
  ChannelHeader& ch = seg_.channel(src, rank_);
  const uint8_t* data = seg_.channelData(src, rank_);
  const uint64_t tail = ch.tail.load(std::memory_order_acquire);
  uint64_t head = ch.head.load(std::memory_order_relaxed);
  const uint64_t start = head;
  auto& in = incoming_[src];
  while (tail != head) {
    if (!in) {
      if (tail - head < sizeof(MsgHeader)) break;
      in = std::make_unique<Incoming>();
      ringRead(data, cap, head, reinterpret_cast<uint8_t*>(&in->hdr), sizeof(MsgHeader));
      head += sizeof(MsgHeader);
      if (in->hdr.magic == kInPlaceMagic) {  // its payload stays in the sender
        acceptInPlaceHeader(src, in->hdr);
        in.reset();
        continue;
      }
      auto it = std::find_if(recvs_.begin(), recvs_.end(), [&](const auto& r) {
        return r->tag == in->hdr.tag && (r->src < 0 || r->src == src);
      });
      if (it != recvs_.end()) {
        if ((*it)->bytes != in->hdr.bytes) {
          fail(*it, sizeMismatch(src, in->hdr.tag, (*it)->bytes, in->hdr.bytes));
          in->discard = true;
        } else {
          in->target = *it;
        }
        recvs_.erase(it);
      } else {
        unexpected_.push_back(Unexpected{src, in->hdr.tag, std::vector<uint8_t>(in->hdr.bytes)});
        in->buffer = &unexpected_.back();
      }
    }
    const uint64_t n = std::min(tail - head, in->hdr.bytes - in->got);
    uint8_t* dst = in->target   ? in->target->data + in->got
                   : in->buffer ? in->buffer->data.data() + in->got
                                : nullptr;
    ringRead(data, cap, head, dst, n);
    head += n;
    in->got += n;
    if (in->got < in->hdr.bytes) break;
    if (in->target) complete(in->target, src);
    if (in->buffer) {
      in->buffer->complete = true;
      if (in->buffer->claimedBy) {
        auto recv = in->buffer->claimedBy;
        deliver(*in->buffer, recv);
        unexpected_.remove_if([&](const Unexpected& u) { return &u == in->buffer; });
      }
    }
    in.reset();
  }
  if (head != start) {
    ch.head.store(head, std::memory_order_release);
    ringPeerAfterData(src);
    return true;
  }
  return false;
}

bool ShmP2P::progress() {
  acceptPosted();
  if (cancelPending_.load(std::memory_order_acquire)) applyCancels();
  bool moved = progressSends();
  for (int src = 0; src < size_; ++src) moved = progressIncoming(src) || moved;
  if (!reading_.empty()) moved = progressInPlaceReads() || moved;
  publishIdle();
  finishDone();
  return moved;
}

void ShmP2P::leaveIdle() {
  RankControl& me = seg_.control(rank_);
  if (me.p2pIdle.load(std::memory_order_relaxed) == 0) return;
  me.p2pIdle.store(0, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // before the round reads the channels
}

void ShmP2P::publishIdle() {
  RankControl& me = seg_.control(rank_);
  const bool wasIdle = me.p2pIdle.load(std::memory_order_relaxed) != 0;
  if (!nothingInFlight()) {
    if (wasIdle) me.p2pIdle.store(0, std::memory_order_seq_cst);
    return;
  }
  if (wasIdle) return;
  std::lock_guard<std::mutex> lock(mutex_);  // a post clears it under the same lock
  if (postedSends_.empty() && postedRecvs_.empty() && !failing_.load(std::memory_order_acquire)) {
    me.p2pIdle.store(1, std::memory_order_seq_cst);
  }
}

void ShmP2P::checkFailures() {
  lastPollNs_ = monotonicNowNs();
  if (failing_.load(std::memory_order_acquire)) {
    std::string reason;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reason = failReason_;
    }
    acceptPosted();
    auto e = std::make_exception_ptr(DistBackendError(what() + ": " + reason));
    for (auto& q : sends_) {
      for (auto& s : q) fail(s, e);
      q.clear();
    }
    for (auto& r : recvs_) fail(r, e);
    recvs_.clear();
    for (auto& u : unexpected_) {
      if (u.claimedBy && !u.complete) fail(u.claimedBy, e), u.claimedBy = nullptr;
    }
    for (auto& in : incoming_) {
      if (in && in->target) fail(in->target, e), in->target = nullptr, in->discard = true;
    }
    failInPlace(e);
    finishDone();
    return;
  }
  auto peerError = [&](int peer, const char* dir, int tag) -> std::exception_ptr {
    const std::string ctx = fmt::format("{}: {} rank {} (tag {})", what(), dir, peer, tag);
    if (seg_.control(peer).failed.load(std::memory_order_acquire) != 0 && peer != rank_) {
      try {
        throwPeerFailure(seg_, peer, ctx);
      } catch (...) {
        return std::current_exception();
      }
    }
    if (!peers_.alive(peer)) {
      return std::make_exception_ptr(DistPeerFailureError(
          fmt::format("{}: rank {} (pid {}) exited", ctx, peer, peers_.pid(peer))));
    }
    return nullptr;
  };
  for (auto& q : sends_) {
    while (!q.empty()) {
      auto s = q.front();
      std::exception_ptr e = peerError(s->dst, "send to", s->tag);
      if (!e && s->deadline.expired()) {
        e = std::make_exception_ptr(DistTimeoutError(fmt::format(
            "{}: send to rank {} (tag {}, p2p seq {}) timed out after {} ms: {} of {} bytes "
            "delivered, the receiver is not draining",
            what(), s->dst, s->tag, s->seq, s->timeout.count(), s->sent, s->bytes)));
      }
      if (!e) break;
      fail(s, e);
      q.pop_front();
      if (!s->deadline.expired()) onFailure_(e, FailureKind::kPeerDied);
    }
  }
  for (auto& out : inPlaceOut_) {
    if (!out) continue;
    std::exception_ptr e = peerError(out->dst, "send to", out->tag);
    // The peer's state first, its count after (as for a receive below): a
    // receiver that read the message and exited since the last round is not
    // a failure of the send, which the next round completes.
    if (e && seg_.channel(rank_, out->dst).inPlaceDone.load(std::memory_order_acquire) >=
                 out->inPlaceNumber) {
      continue;
    }
    if (!e && out->deadline.expired()) {
      e = std::make_exception_ptr(DistTimeoutError(fmt::format(
          "{}: send to rank {} (tag {}, p2p seq {}) timed out after {} ms: the receiver has not "
          "read its {} bytes (sent in place: no matching receive, or the receiver is not "
          "progressing)",
          what(), out->dst, out->tag, out->seq, out->timeout.count(), out->bytes)));
    }
    if (!e) continue;
    const bool timedOut = out->deadline.expired();
    fail(out, e);
    out = nullptr;
    if (!timedOut) onFailure_(e, FailureKind::kPeerDied);
  }
  for (auto it = recvs_.begin(); it != recvs_.end();) {
    auto r = *it;
    std::exception_ptr e;
    if (r->src >= 0) {
      // The peer's state first, the channel after: a sender that publishes
      // its message and exits between the two reads would otherwise be found
      // dead with its message unread (a receive failed with "exited" and the
      // message in the channel, about once in a thousand exchanges under load).
      // What a dead sender left is read by the next round.
      e = peerError(r->src, "recv from", r->tag);
      ChannelHeader& ch = seg_.channel(r->src, rank_);
      const bool drained = ch.tail.load(std::memory_order_acquire) ==
                           ch.head.load(std::memory_order_relaxed);
      if (!drained) e = nullptr;
    }
    if (!e && r->deadline.expired()) {
      e = std::make_exception_ptr(DistTimeoutError(fmt::format(
          "{}: recv from {} (tag {}) timed out after {} ms: no matching message arrived", what(),
          r->src >= 0 ? "rank " + std::to_string(r->src) : std::string("any rank"), r->tag,
          r->timeout.count())));
    }
    if (!e) {
      ++it;
      continue;
    }
    fail(r, e);
    it = recvs_.erase(it);
    if (!r->deadline.expired()) onFailure_(e, FailureKind::kPeerDied);
  }
  finishDone();
}

// The engine's idle wait is for new work, not for a peer in the middle of a
// step: spin only briefly, never yield (Note [shm waiting]).
constexpr WaitPolicy kIdleWait{2'000, 0};

bool ShmP2P::nothingInFlight() const {
  return recvs_.empty() && reading_.empty() &&
         std::all_of(sends_.begin(), sends_.end(), [](const auto& q) { return q.empty(); }) &&
         std::all_of(inPlaceOut_.begin(), inPlaceOut_.end(), [](const auto& s) { return !s; }) &&
         std::all_of(incoming_.begin(), incoming_.end(),
                     [](const auto& in) { return in == nullptr; });
}

// Note [shm bell]: registered as a sleeper before the bell is compared with
// what the loop saw before its last progress(), so a ring after that read
// ends the wait at once.
void ShmP2P::sleepUntilRung(uint32_t seen) {
  constexpr int64_t kSecondNs = 1'000'000'000;
  const int64_t idleSleepNs = std::min<int64_t>(10 * kSecondNs, kSecondNs * std::max(1, size_ / 16));
  RankControl& me = seg_.control(rank_);
  me.p2pSleepers.fetch_add(1, std::memory_order_seq_cst);
  if (me.p2pBell.load(std::memory_order_seq_cst) == seen &&
      !stopping_.load(std::memory_order_acquire) && !failing_.load(std::memory_order_acquire)) {
    futexWait(&me.p2pBell, seen, idleSleepNs);
  }
  me.p2pSleepers.fetch_sub(1, std::memory_order_seq_cst);
}

void ShmP2P::driveWhenWaited(Work& work) {
  // The ticket is the Work's address (Note [Waiting drives the engine]).
  WorkCompletion::setInlineRunner(work, waiter_, reinterpret_cast<uint64_t>(&work));
}

bool ShmP2P::driveRound(bool* moved) {
  if (tDriving == this || stopping_.load(std::memory_order_acquire) ||
      !engineMutex_.try_lock()) {
    return false;
  }
  std::lock_guard<std::mutex> lock(engineMutex_, std::adopt_lock);
  DrivingScope driving(this);
  const bool any = progress();
  if (moved) *moved = any;
  return true;
}

bool ShmP2P::driveUntilDone(const Work& work) {
  if (tDriving == this) return false;  // a wait from inside a round's callbacks
  const bool yield = wait_.yieldNs > 0;
  const int64_t patience = std::max(kP2PSpinNs, wait_.spinNs) + wait_.yieldNs;
  int64_t until = monotonicNowNs() + patience;
  DriverScope driver(*this);  // Note [A driven engine is not woken]
  while (!work.isCompleted()) {
    bool moved = false;
    driveRound(&moved);
    const int64_t now = monotonicNowNs();
    if (moved) {
      until = now + patience;
    } else if (now > until) {
      // The engine thread takes over, polling for failures and deadlines
      // (Note [Posting drives a round]: nothing may have woken it yet).
      ringPeer(rank_);
      return work.isCompleted();
    }
    if (yield && !moved) {
      sched_yield();
    } else {
      cpuRelax();
    }
  }
  return true;
}

void ShmP2P::loop() {
  RankControl& me = seg_.control(rank_);
  auto locked = [this](auto&& fn) {
    std::lock_guard<std::mutex> lock(engineMutex_);
    DrivingScope driving(this);
    return fn();
  };
  while (!stopping_.load(std::memory_order_acquire)) {
    const uint32_t seen = me.p2pBell.load(std::memory_order_acquire);
    if (locked([this] { return progress(); })) continue;
    if (locked([this] { return nothingInFlight(); }) &&
        !failing_.load(std::memory_order_acquire)) {
      sleepUntilRung(seen);
      continue;
    }
    const int64_t idleSince = monotonicNowNs();
    if (locked([this] { return lastPollNs_; }) < idleSince - kPollIntervalNs || failing_.load()) {
      locked([this] { checkFailures(); });
    }
    // Note [Finish after the ring]: a poll interval without a bell ends the
    // wait too, so the channels are scanned again.
    bool rescan = false;
    waitUntil(
        me.p2pBell, me.p2pSleepers,
        [&] {
          return rescan || me.p2pBell.load(std::memory_order_acquire) != seen ||
                 stopping_.load(std::memory_order_acquire);
        },
        [&] {
          rescan = locked([&] {
            checkFailures();
            return lastPollNs_ - idleSince >= kPollIntervalNs;
          });
        },
        kIdleWait);
  }
}

}  // namespace distlab::comm::shm
