#pragma once
// Future: the value of an asynchronous operation (torch.futures.Future as DDP
// communication hooks use it). Holds a list of tensors or an error.
//
//   auto fut = group->allreduce(t)->getFuture();
//   auto next = fut->then([n](Future& f) {
//     auto v = f.value();          // rethrows f's error
//     v[0].div_(n);
//     return v;
//   });
//
// Blocking: wait(timeout) blocks until completed or the timeout passes (then
// throws DistTimeoutError); value() waits with the default timeout (kWaitForever
// is not offered: nothing waits without a deadline).
// Callbacks registered with then() run exactly once, on the thread that
// completes the future (or immediately on the calling thread when it is
// already complete). A callback that throws completes the child future with
// that error. Thread-safe.
//
// Note [Waiting on a Work's future helps]
// Work::wait runs the operation on the waiting thread when it is next in its
// backend's queue (Note [Waiting helps] in progress_thread.hpp). A Work's
// future carries the same help (Work::getFuture sets it), and so does every
// future chained from it with then(): waiting for DDP's last bucket, a comm
// hook's result or a Join hook's shadow collective runs the collective there,
// instead of sleeping while the progress thread wakes up, or, parked after
// the caller's own waits took their tasks, starts it up to a park later.
// The help runs before the wait blocks, without the future's lock; it does
// nothing when the operation already runs, is not next, or the wait's
// timeout is shorter than the operation's own (running it could overrun it).
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/tensor/tensor.hpp"

namespace distlab::comm {

class Future : public std::enable_shared_from_this<Future> {
 public:
  using Value = std::vector<Tensor>;
  using Callback = std::function<Value(Future&)>;
  // Note [Waiting on a Work's future helps]: given the wait's timeout.
  using WaitHelp = std::function<void(std::chrono::milliseconds)>;
  // Timeout used by value()/wait() without an argument.
  static constexpr std::chrono::milliseconds kDefaultWaitTimeout{30 * 60 * 1000};

  Future() = default;
  Future(const Future&) = delete;
  Future& operator=(const Future&) = delete;

  // An already-completed future (torch.futures.Future().set_result(v)).
  static std::shared_ptr<Future> completed(Value value);
  static std::shared_ptr<Future> failed(std::exception_ptr error);

  // Completion (exactly once; a second call throws Error).
  void markCompleted(Value value);
  void setError(std::exception_ptr error);

  bool isCompleted() const;  // torch: done()
  bool hasError() const;
  std::exception_ptr exception() const;  // null when none (or not completed)

  // Blocks until completed; throws DistTimeoutError after `timeout`. Does not
  // rethrow the future's error (value() does).
  void wait(std::chrono::milliseconds timeout = kDefaultWaitTimeout);
  // Waits, then returns the value or rethrows the error.
  Value value(std::chrono::milliseconds timeout = kDefaultWaitTimeout);
  // The value of a completed future without waiting (throws if not complete).
  const Value& constValue() const;

  // Returns a future completed with callback(*this) once this one completes.
  std::shared_ptr<Future> then(Callback callback);
  // Runs `fn(*this)` on completion; no child future.
  void addCallback(std::function<void(Future&)> fn);
  // What wait() does before it blocks (Note [Waiting on a Work's future
  // helps]); then() passes it on to the child. Set before the future is shared.
  void setWaitHelp(WaitHelp help);

 private:
  void runCallbacks();

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool completed_ = false;       // GUARDED_BY(mutex_)
  Value value_;                  // GUARDED_BY(mutex_)
  std::exception_ptr error_;     // GUARDED_BY(mutex_)
  std::vector<std::function<void(Future&)>> callbacks_;  // GUARDED_BY(mutex_)
  WaitHelp waitHelp_;            // GUARDED_BY(mutex_)
};

}  // namespace distlab::comm
