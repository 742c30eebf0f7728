#pragma once
// GlooP2P: send / recv / recv-from-any for the Gloo backend.
//
// A send is buffered: its Work completes once the data is staged and posted
// (a blocking send never waits for the matching receive, as with shm); delivery
// continues in the background. Posting happens at issue time on the caller's thread (so point-to-point
// never waits behind a queued collective, and isend/irecv pairs issued in
// either order cannot deadlock); one waiter thread per in-flight operation
// completes its Work. Data moves through a private staging copy: a send copies
// the tensor when issued (the caller may reuse it at once), a recv lands in
// staging and is copied into the tensor on success, so an operation that timed
// out can be abandoned without Gloo ever writing into the caller's memory later.
// Both run inside the Work's execution bracket (Note [Work failure and the
// caller's tensors]): a recv failed from outside is treated as timed out (its
// wait aborted, its message left to an orphan) and its tensor is not written.
//
// Timeouts: a timer aborts the Gloo wait at the operation's deadline; only that
// operation fails (DistTimeoutError), the group stays usable (as shm). Gloo
// cannot withdraw a posted receive, so a timed-out receive stays posted as an
// "orphan" and will take the next message from its peer and tag; the next
// receive for that peer and tag adopts the oldest orphan instead of posting
// anew, which keeps messages in order. A timed-out send is delivered when the
// peer receives it (its staging copy is kept). Buffers are kept until the
// backend is destroyed. A broken connection fails the operation through
// GlooBackend::translate and breaks the group.
// Send to self is allowed: a local mailbox per tag (oldest message first);
// recv-from-any takes a queued self message first, else posts to the peers.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include "runtime/comm/work.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::comm::gloo_backend {

class GlooBackend;
class PeerMonitor;

class GlooP2P {
 public:
  GlooP2P(GlooBackend& backend, std::shared_ptr<::gloo::Context> context, PeerMonitor& monitor);
  ~GlooP2P();
  GlooP2P(const GlooP2P&) = delete;
  GlooP2P& operator=(const GlooP2P&) = delete;

  // `work` is finished by this class. Throws (at issue) only for a broken pair.
  void send(const WorkPtr& work, const Tensor& tensor, int dst, int tag, Milliseconds timeout);
  // src == -1: any source.
  void recv(const WorkPtr& work, const Tensor& tensor, int src, int tag, Milliseconds timeout);
  // Waits (until `deadline`) for buffered sends to be delivered; returns
  // whether all were. Shutdown calls this so a rank that finishes right after
  // a send does not take the message down with it.
  bool flushSends(Deadline deadline);
  // Fails every in-flight operation with `reason` and joins the waiters.
  void stop(const std::string& reason);

 private:
  struct Op;
  void startWaiter(const std::shared_ptr<Op>& op);
  void waitGloo(Op& op);
  void waitSelf(Op& op);
  void timerLoop();
  void reapLocked();
  void completeRecv(Op& op, int src);
  // Completes `op`'s Work: closes the execution bracket send()/recv() opened.
  void finishOp(Op& op, std::exception_ptr error);
  // Runs `post` (the Gloo buffer's send or recv) inside the Work's open
  // bracket; on an exception ends the bracket with the translated failure
  // and returns false.
  template <class Post>
  bool postInBracket(Op& op, const Post& post);

  GlooBackend& backend_;
  std::shared_ptr<::gloo::Context> context_;
  PeerMonitor& monitor_;
  std::mutex mutex_;
  std::condition_variable cv_;  // self mailbox changes, stop, timer ticks
  bool stopping_ = false;                             // GUARDED_BY(mutex_)
  std::string stopReason_;                            // GUARDED_BY(mutex_)
  std::list<std::shared_ptr<Op>> ops_;                // GUARDED_BY(mutex_)
  std::vector<std::shared_ptr<Op>> abandoned_;        // GUARDED_BY(mutex_)
  std::map<int, std::deque<std::vector<uint8_t>>> selfQueue_;  // GUARDED_BY(mutex_)
  // Timed-out receives still posted in Gloo, by (source or -1, tag), oldest first.
  std::map<std::pair<int, int>, std::deque<std::shared_ptr<Op>>> orphans_;  // GUARDED_BY(mutex_)
  std::thread timer_;
};

}  // namespace distlab::comm::gloo_backend
