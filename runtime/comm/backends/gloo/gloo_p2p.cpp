#include "runtime/comm/backends/gloo/gloo_p2p.hpp"

#include <fmt/format.h>

#include <cstring>

#include <gloo/types.h>

#include "runtime/comm/backends/gloo/gloo_backend.hpp"
#include "runtime/comm/backends/gloo/gloo_peer_monitor.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm::gloo_backend {
namespace {

// Gloo's collectives use slot prefixes 0x01-0x08; point-to-point gets its own.
constexpr uint8_t kP2PSlotPrefix = 0x40;
// Gloo closes the whole context when its own wait times out; distlab's timer
// aborts the wait first, so Gloo's bound only has to be later than ours.
constexpr Milliseconds kGlooWaitSlack{10 * 60 * 1000};
constexpr Milliseconds kTimerPeriod{10};

uint64_t p2pSlot(int tag) {
  return static_cast<uint64_t>(::gloo::Slot::build(kP2PSlotPrefix, static_cast<uint32_t>(tag)));
}

}  // namespace

struct GlooP2P::Op {
  WorkPtr work;
  Tensor tensor;
  bool isRecv = false;
  int peer = -1;  // -1: any source
  int tag = 0;
  bool self = false;
  std::vector<uint8_t> staging;
  std::unique_ptr<::gloo::transport::UnboundBuffer> buf;
  std::shared_ptr<Op> adopted;  // an orphaned receive this one completes instead
  ::gloo::transport::UnboundBuffer* buffer() const { return adopted ? adopted->buf.get() : buf.get(); }
  const std::vector<uint8_t>& data() const { return adopted ? adopted->staging : staging; }
  Deadline deadline = Deadline::after(Milliseconds(0));
  Clock::time_point started = Clock::now();
  std::atomic<bool> expired{false};
  // A failure from outside (Work::abort, the watchdog) arrived while the
  // operation ran: the timer aborts its wait as for a timeout.
  std::atomic<bool> cancelled{false};
  std::atomic<bool> done{false};
  std::thread waiter;
};

GlooP2P::GlooP2P(GlooBackend& backend, std::shared_ptr<::gloo::Context> context,
                 PeerMonitor& monitor)
    : backend_(backend), context_(std::move(context)), monitor_(monitor) {
  timer_ = std::thread([this] { timerLoop(); });
}

GlooP2P::~GlooP2P() {
  stop("the backend was destroyed");
  std::lock_guard<std::mutex> lock(mutex_);
  abandoned_.clear();
  orphans_.clear();
}

// Posting to Gloo throws when the pair is already closed (the peer died
// before this call). The Work's bracket is open then, and a failure handed
// to it from outside would wait for an endExecution that never comes (the
// Work stayed "started" until the caller's wait gave up, 35 s later): so the
// failure ends the bracket here, as the waiter's would.
template <class Post>
bool GlooP2P::postInBracket(Op& op, const Post& post) {
  try {
    post();
    return true;
  } catch (...) {
    auto e = backend_.translate(std::current_exception(), op.work->info(), op.started);
    backend_.markFailed(failureReasonOf(e));
    finishOp(op, e);
    return false;
  }
}

void GlooP2P::send(const WorkPtr& work, const Tensor& tensor, int dst, int tag,
                   Milliseconds timeout) {
  auto op = std::make_shared<Op>();
  op->work = work;
  op->peer = dst;
  op->tag = tag;
  op->self = dst == context_->rank;
  op->deadline = Deadline::after(timeout);
  // The bracket covers the only access to the caller's tensor: the copy into
  // staging. A send is buffered, so it ends with that copy.
  if (!WorkCompletion::beginExecution(*work, [](std::exception_ptr) {})) return;
  op->staging.assign(static_cast<const uint8_t*>(tensor.rawData()),
                     static_cast<const uint8_t*>(tensor.rawData()) + tensor.nbytes());
  if (op->self) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      selfQueue_[tag].push_back(std::move(op->staging));
    }
    cv_.notify_all();
    WorkCompletion::endExecution(*work, nullptr);
    return;
  }
  op->staging.resize(std::max<size_t>(op->staging.size(), 1));
  const bool posted = postInBracket(*op, [&] {
    op->buf = context_->createUnboundBuffer(op->staging.data(), tensor.nbytes());
    op->buf->send(dst, p2pSlot(tag), 0, tensor.nbytes());
  });
  if (!posted) return;
  // Buffered send: the staged copy is ours, so the Work completes now (a
  // blocking send never waits for the matching receive, as with shm); the
  // waiter keeps the copy until Gloo delivered it (its later results change
  // nothing: the Work is complete).
  WorkCompletion::endExecution(*work, nullptr);
  startWaiter(op);
}

void GlooP2P::recv(const WorkPtr& work, const Tensor& tensor, int src, int tag,
                   Milliseconds timeout) {
  auto op = std::make_shared<Op>();
  op->work = work;
  op->tensor = tensor;
  op->isRecv = true;
  op->peer = src;
  op->tag = tag;
  op->deadline = Deadline::after(timeout);
  // Note [Work failure and the caller's tensors]: the bracket stays open
  // until the waiter's last access (the copy out of staging). A failure from
  // outside sets `cancelled`; the timer then aborts the wait, and the
  // message, should it come later, stays in staging (an orphan).
  std::weak_ptr<Op> weak = op;
  auto cancel = [this, weak](std::exception_ptr) {
    if (auto o = weak.lock()) o->cancelled.store(true);
    cv_.notify_all();
  };
  if (!WorkCompletion::beginExecution(*work, std::move(cancel))) return;
  const int me = context_->rank;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = selfQueue_.find(tag);
    bool selfReady = it != selfQueue_.end() && !it->second.empty();
    op->self = src == me || (src == -1 && (selfReady || context_->size == 1));
    auto orphan = orphans_.find({src, tag});
    if (!op->self && orphan != orphans_.end() && !orphan->second.empty()) {
      op->adopted = orphan->second.front();
      orphan->second.pop_front();
    }
  }
  if (!op->self && !op->adopted) {
    op->staging.resize(std::max<size_t>(tensor.nbytes(), 1));
    const bool posted = postInBracket(*op, [&] {
      op->buf = context_->createUnboundBuffer(op->staging.data(), tensor.nbytes());
      if (src >= 0) {
        op->buf->recv(src, p2pSlot(tag), 0, tensor.nbytes());
      } else {
        std::vector<int> peers;
        for (int q = 0; q < context_->size; ++q)
          if (q != me) peers.push_back(q);
        op->buf->recv(peers, p2pSlot(tag), 0, tensor.nbytes());
      }
    });
    if (!posted) return;
  }
  startWaiter(op);
}


void GlooP2P::startWaiter(const std::shared_ptr<Op>& op) {
  std::lock_guard<std::mutex> lock(mutex_);
  reapLocked();
  if (stopping_) {
    finishOp(*op, std::make_exception_ptr(DistBackendError(
        fmt::format("{}: {}", op->work->info().describe(), stopReason_))));
    return;
  }
  ops_.push_back(op);
  op->waiter = std::thread([this, op] {
    monitor_.opBegin();
    if (op->self) {
      waitSelf(*op);
    } else {
      waitGloo(*op);
    }
    monitor_.opEnd();
    op->done.store(true);
  });
}

void GlooP2P::finishOp(Op& op, std::exception_ptr error) {
  // A send's bracket closed when it was staged: this changes nothing then.
  WorkCompletion::endExecution(*op.work, std::move(error));
}

void GlooP2P::completeRecv(Op& op, int src) {
  if (op.adopted && op.adopted->tensor.nbytes() != op.tensor.nbytes()) {
    finishOp(op, std::make_exception_ptr(DistBackendError(fmt::format(
        "{}: rank {}: the message from rank {} has {} bytes but the recv expects {}",
        op.work->info().describe(), context_->rank, src, op.adopted->tensor.nbytes(),
        op.tensor.nbytes()))));
    return;
  }
  if (op.tensor.nbytes() > 0) std::memcpy(op.tensor.rawData(), op.data().data(), op.tensor.nbytes());
  WorkCompletion::setSourceRank(*op.work, src);
  finishOp(op, nullptr);
}

void GlooP2P::waitGloo(Op& op) {
  try {
    int src = -1;
    const Milliseconds bound = op.deadline.remaining() + kGlooWaitSlack;
    auto* buf = op.buffer();
    const bool ok = op.isRecv ? buf->waitRecv(&src, bound) : buf->waitSend(&src, bound);
    if (ok) {
      if (op.isRecv) {
        completeRecv(op, src);
      } else {
        finishOp(op, nullptr);
      }
      return;
    }
    if (!op.expired.load()) {
      // Woken because the group failed or the backend stops (a cancelled
      // operation is `expired` too: the timer aborted its wait).
      bool stopping;
      std::string stopReason;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping = stopping_;
        stopReason = stopReason_;
      }
      finishOp(op, stopping ? std::make_exception_ptr(DistBackendError(fmt::format(
                                     "{}: {}", op.work->info().describe(), stopReason)))
                               : backend_.translate(std::make_exception_ptr(
                                                        std::runtime_error("interrupted")),
                                                    op.work->info(), op.started));
      return;
    }
    const std::string why =
        fmt::format("timed out after {} ms waiting for {}", op.work->info().timeout.count(),
                    op.peer >= 0 ? fmt::format("rank {}", op.peer) : "any rank");
    if (op.isRecv) {
      // Still posted in Gloo: the next receive for this peer and tag adopts it.
      std::lock_guard<std::mutex> lock(mutex_);
      auto orphan = op.adopted;
      if (!orphan) {
        orphan = std::make_shared<Op>();
        orphan->tensor = op.tensor;
        orphan->staging = std::move(op.staging);
        orphan->buf = std::move(op.buf);
      }
      orphans_[{op.peer, op.tag}].push_front(orphan);
    }
    auto msg = fmt::format("{}: rank {}: {}", op.work->info().describe(), context_->rank, why);
    finishOp(op, std::make_exception_ptr(DistTimeoutError(msg)));
  } catch (...) {
    auto e = backend_.translate(std::current_exception(), op.work->info(), op.started);
    backend_.markFailed(failureReasonOf(e));
    finishOp(op, e);
  }
}

void GlooP2P::waitSelf(Op& op) {
  std::unique_lock<std::mutex> lock(mutex_);
  // Woken by a message, a stop, or a cancel (which notifies without the
  // lock, so the wait also wakes each timer period to look).
  bool got = false;
  while (!op.deadline.expired() && !op.cancelled.load()) {
    got = cv_.wait_until(lock, std::min(op.deadline.at(), Clock::now() + kTimerPeriod), [&] {
      auto it = selfQueue_.find(op.tag);
      return stopping_ || (it != selfQueue_.end() && !it->second.empty());
    });
    if (got) break;
  }
  auto it = selfQueue_.find(op.tag);
  if (got && !op.cancelled.load() && it != selfQueue_.end() && !it->second.empty()) {
    op.staging = std::move(it->second.front());
    it->second.pop_front();
    lock.unlock();
    if (op.staging.size() != op.tensor.nbytes()) {
      finishOp(op, std::make_exception_ptr(DistBackendError(fmt::format(
          "{}: rank {} sent itself {} bytes but the recv expects {}", op.work->info().describe(),
          context_->rank, op.staging.size(), op.tensor.nbytes()))));
      return;
    }
    completeRecv(op, context_->rank);
    return;
  }
  std::string why = stopping_ ? stopReason_
                              : fmt::format("timed out after {} ms waiting for a message to self",
                                            op.work->info().timeout.count());
  lock.unlock();
  auto msg = fmt::format("{}: rank {}: {}", op.work->info().describe(), context_->rank, why);
  finishOp(op, stopping_ ? std::make_exception_ptr(DistBackendError(msg))
                            : std::make_exception_ptr(DistTimeoutError(msg)));
}

void GlooP2P::timerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    cv_.wait_for(lock, kTimerPeriod);
    for (auto& op : ops_) {
      if (op->done.load() || op->self || op->expired.load()) continue;
      if (!op->deadline.expired() && !op->cancelled.load()) continue;
      op->expired.store(true);
      if (op->isRecv) {
        op->buffer()->abortWaitRecv();
      } else {
        op->buffer()->abortWaitSend();
      }
    }
  }
}

void GlooP2P::reapLocked() {
  for (auto it = ops_.begin(); it != ops_.end();) {
    if ((*it)->done.load()) {
      (*it)->waiter.join();
      // A timed-out send stays posted in Gloo (its staging copy with it).
      if ((*it)->expired.load() && !(*it)->isRecv && (*it)->buf) abandoned_.push_back(*it);
      it = ops_.erase(it);
    } else {
      ++it;
    }
  }
}

bool GlooP2P::flushSends(Deadline deadline) {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      bool pending = false;
      for (const auto& op : ops_) {
        pending = pending || (!op->isRecv && !op->self && !op->done.load() && !op->expired.load());
      }
      if (!pending) return true;
    }
    if (deadline.expired()) return false;
    std::this_thread::sleep_for(Milliseconds(2));
  }
}

void GlooP2P::stop(const std::string& reason) {
  std::list<std::shared_ptr<Op>> ops;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      stopping_ = true;
      stopReason_ = reason;
    }
    ops.swap(ops_);
    for (auto& op : ops) {
      if (op->self || op->done.load() || op->buffer() == nullptr) continue;
      if (op->isRecv) {
        op->buffer()->abortWaitRecv();
      } else {
        op->buffer()->abortWaitSend();
      }
    }
  }
  cv_.notify_all();
  for (auto& op : ops) {
    if (op->waiter.joinable()) op->waiter.join();
  }
  if (timer_.joinable()) timer_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& op : ops)
    if (op->buffer()) abandoned_.push_back(op);
}

}  // namespace distlab::comm::gloo_backend
