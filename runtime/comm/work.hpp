#pragma once
// Work: the handle of one issued operation (c10d Work), and the metadata that
// observers (flight recorder, watchdog, tracing) read.
//
// Lifecycle: kScheduled (issued, queued) -> kStarted (the backend began running
// it) -> kCompleted | kFailed. Timestamps (monotonic ns) are set at each
// transition. Only the backend running the operation makes them (Note [Who
// completes a Work] in work_completion.hpp); callers and observers read them,
// and may fail a Work from outside with abort().
//
// wait(timeout) contract, written as code:
//   block until isCompleted() or the timeout passes;
//   timeout passed -> throw DistTimeoutError naming the group, seq and op;
//   !isSuccess()   -> std::rethrow_exception(exception());
//   return true.
// wait() without a timeout uses the operation's own timeout (info().timeout);
// the backend fails the operation itself when that passes, so wait() returns
// or throws by then. Thread-safe: any thread may wait, observe or poll.
//
// Note [Work completion order]
// finish() makes one transition, in this order: the state (and error) is set;
// observers are notified (onCompleted); waiters in wait() are woken; the
// Future is completed. So an observer (flight recorder, watchdog) has seen a
// Work finish before any wait() on it returns, and a caller that waited can
// rely on the observers' view (e.g. a flight-recorder dump) being current.
//
// Note [Work failure and the caller's tensors]
// Once a Work is failed, its backend never reads or writes the caller's
// tensors again. A failure from outside the backend (abort(), the watchdog's
// finish(error)) can arrive while the backend is in the middle of the
// operation, so a backend brackets the part that touches the tensors with
// beginExecution(cancel) / endExecution(error). A failure arriving inside the
// bracket is recorded, `cancel` is called (the backend must let go promptly),
// and the failure is published by endExecution() -- after the backend's last
// access -- taking precedence over the backend's own result. Outside the
// bracket a failure is published at once, and beginExecution() then returns
// false: the backend must not start the operation. Every CPU backend and the
// CUDA staging decorator bracket their accesses; the nccl backend cannot (its
// kernels stop only when the communicator is aborted, which may block), so a
// failed NCCL Work's tensors are undefined, as in PyTorch.
//
// Note [Unshared execution]
// A blocking operation that its backend runs inline at once runs before the
// Work is returned: nobody else holds it yet (no observer -- the process
// group adds those afterwards --, no waiter, no Future, not the watchdog), so
// nothing from outside can fail it while it runs, and its transitions need no
// lock, no cancel callback and nobody woken. startUnshared/finishUnshared make
// them so (startUnshared throws when the Work already has an observer, a
// Future or a queue ticket); observers added later replay them, as for any
// Work. What can still stop the operation from outside is the backend's
// abort, which the backend checks itself.
//
// Note [Per-operation cost]
// A small collective costs about a microsecond end to end, so the fixed cost
// around it counts: allocations, locks, type-erased calls, clock reads.
// What the hot path avoids, without changing what anyone observes:
// - a blocking operation run inline is never wrapped in a std::function: the
//   backend's body is called through a function pointer and becomes a
//   ProgressThread::Task only when it is queued; a Task keeps the closure
//   inline (InlineTask, runtime/core/inline_task.hpp) in a queue that reuses
//   its slots (RingQueue), so the asynchronous path allocates only its Work;
// - a queued operation's scheduling time is also its queueing time (one
//   clock read), and wait() after running the operation itself (Note
//   [Waiting helps]) returns without the lock or a deadline;
// - an operation on one tensor builds its WorkInfo from a span, not from two
//   temporary vectors, and the WorkInfo keeps its shapes and dtypes inline
//   (Note [Tensor metadata without allocation]); one whose input and output
//   are that tensor leaves them to be filled on demand (Note [Tensor
//   metadata on demand]), and makeWorkInfo copies its strings straight in
//   (a by-value string pass adds a move);
// - a blocking operation run inline at once changes the Work's state
//   without its lock (Note [Unshared execution]), claims the queue without
//   one (Note [Claimed without the lock] in progress_thread.hpp) and, on the
//   shm backend, builds its Work -- WorkInfo made in place -- after arriving
//   at its first step (Note [Bookkeeping while the stamps travel] in
//   shm_op.hpp);
// - complete() takes the Work's lock once when no observer must run before
//   the waiters, the execution bracket takes it once at each end (begin and
//   start, end and completion), and wait() on a finished Work takes no lock
//   and reads no clock (released_ is an atomic);
// - an operation with one output tensor (allreduce, broadcast, ...) keeps it
//   in the Work as it is, not in a vector (an allocation per operation), and
//   the process group finds its backend without a lock (Note [Backends
//   without a lock]); the Work's start and the backend's deadline share one
//   clock read (beginExecution's startedNs), and so do its scheduling and
//   start when it runs inline at once (kScheduledAtStart);
// - a backend's errorReason() is a single atomic load while it is healthy;
// - queueing wakes a sleeping progress thread after releasing the queue's
//   lock, so the woken thread does not block on it at once;
// - finishing a task signals the progress thread's idle condition only when
//   somebody waits in drain();
// - the flight recorder writes into a ring of reused entries (Note [Flight
//   recorder ring]) and DETAIL compares fingerprints as bytes first (Note
//   [Fingerprints compared as bytes]), reusing its exchange buffers.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/comm/future.hpp"
#include "runtime/comm/tensor_meta_list.hpp"
#include "runtime/comm/types.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::comm {

enum class WorkState : uint8_t { kScheduled, kStarted, kCompleted, kFailed };
std::string_view workStateName(WorkState state);  // "scheduled", "started", ...

// What an operation is, for error messages, the flight recorder and the
// watchdog. Filled by ProcessGroup (describeWork) before the backend sees it.
struct WorkInfo {
  std::string groupName;
  int rank = -1;           // this process's rank in the group
  OpType opType = OpType::kUnknown;
  uint64_t seq = 0;        // collective seq, or per-peer p2p number
  int peer = -1;           // p2p peer (group rank), root for rooted collectives, else -1
  int tag = 0;             // p2p tag
  int64_t numelIn = 0;     // total elements over all inputs
  int64_t numelOut = 0;    // total elements over all outputs
  TensorMetaList inputs;   // shapes and dtypes (Note [Tensor metadata without allocation])
  TensorMetaList outputs;
  std::string reduceOp;    // "" when the op does not reduce
  Milliseconds timeout{0};

  // "allreduce(seq 7, group 'default', 1024 x float32)" style one-liner.
  std::string describe() const;
};

class Work;
class InlineRunner;  // progress_thread.hpp

// Notified of state changes. Called on the thread that makes the transition,
// outside the Work's lock; must not block. An observer added after a
// transition is notified of the transitions already made, in order.
class WorkObserver {
 public:
  virtual ~WorkObserver() = default;
  virtual void onScheduled(const Work& /*work*/) {}
  virtual void onStarted(const Work& /*work*/) {}
  virtual void onCompleted(const Work& /*work*/) {}  // success or failure
};

// A Work's `scheduledNs` when it is about to start on the issuing thread (a
// blocking operation run inline): it was scheduled when it started, and one
// clock read gives both (Note [Per-operation cost]).
inline constexpr int64_t kScheduledAtStart = -1;

// Note [Tensor metadata on demand]
// An operation whose input and output are one tensor (allreduce, broadcast,
// reduce) makes its Work with kMetaFromOutput and a WorkInfo without tensor
// metadata; info() fills `inputs`, `outputs`, `numelIn` and `numelOut` from
// the Work's output tensor the first time anyone asks (a tensor's shape and
// dtype never change), once, whatever thread asks. Building them costs an
// eighth of a small blocking allreduce (reports/collectives_shm_notes.md),
// and with no flight recorder or trace nobody asks.
struct MetaFromOutputTag {
  explicit MetaFromOutputTag() = default;
};
inline constexpr MetaFromOutputTag kMetaFromOutput{};

// Shared-owned (WorkPtr). Not enable_shared_from_this: nothing needs it, and
// its weak count costs two atomic updates per operation.
class Work {
 public:
  // `outputs` are what result() and the future's value return. `scheduledNs`:
  // when the operation was issued (monotonicNowNs()); 0 reads the clock here;
  // or kScheduledAtStart.
  Work(WorkInfo info, std::vector<Tensor> outputs, int64_t scheduledNs = 0);
  // The same for an operation with one output (Note [Per-operation cost]);
  // the WorkInfo is moved once (a move is not free: it holds strings and
  // inline metadata).
  Work(WorkInfo&& info, Tensor output, int64_t scheduledNs = 0);
  // Either of the above with the WorkInfo that `makeInfo()` returns built in
  // place, not moved (a backend that builds it only when needed: Note
  // [Bookkeeping while the stamps travel] in shm_op.hpp). `Outputs`: a
  // std::vector<Tensor>, or one Tensor.
  template <typename MakeInfo, typename Outputs>
  Work(std::in_place_t, MakeInfo&& makeInfo, Outputs outputs, int64_t scheduledNs = 0)
      : info_(std::forward<MakeInfo>(makeInfo)()) {
    if constexpr (std::is_same_v<Outputs, Tensor>) {
      output_ = std::move(outputs);
      singleOutput_ = true;
    } else {
      outputs_ = std::move(outputs);
    }
    scheduledNs_ = scheduledNs != 0 ? scheduledNs : monotonicNowNs();
  }
  // The in-place form for an operation whose input and output are `output`:
  // `makeInfo()` leaves the tensor metadata empty (Note [Tensor metadata on
  // demand]).
  template <typename MakeInfo>
  Work(MetaFromOutputTag, MakeInfo&& makeInfo, Tensor output, int64_t scheduledNs = 0)
      : Work(std::in_place, std::forward<MakeInfo>(makeInfo), std::move(output), scheduledNs) {
    metaPending_.store(true, std::memory_order_relaxed);  // published with the Work
  }
  virtual ~Work();
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;

  // An already-completed Work (for operations that need no communication).
  static std::shared_ptr<Work> completed(WorkInfo info, std::vector<Tensor> outputs);

  // ---- callers ------------------------------------------------------------------
  virtual bool isCompleted() const;
  virtual bool isSuccess() const;  // completed without error
  virtual std::exception_ptr exception() const;
  // The rank (group rank) a recv got its data from; -1 before completion or for
  // non-recv operations.
  int sourceRank() const;
  // The output tensors (empty until completed successfully).
  std::vector<Tensor> result() const;
  // See the header comment. Returns true (PyTorch's bool result).
  virtual bool wait(Milliseconds timeout = kUnsetTimeout);
  // Completed with result() or with the error; then()-callbacks chain on it.
  std::shared_ptr<Future> getFuture();
  // Best effort: fails the Work with `reason` if not yet completed (the backend
  // may still be running it; Backend::abort stops that).
  void abort(const std::string& reason = "aborted");
  // Fails the Work with `error` (non-null), as abort(reason) does with a
  // DistBackendError: a failure from outside the backend, such as the
  // watchdog's timeout. Never completes it successfully. A Work that wraps
  // another (a decorator's) passes the failure on to it.
  virtual void abort(std::exception_ptr error);

  // ---- observers ------------------------------------------------------------------
  const WorkInfo& info() const {
    if (metaPending_.load(std::memory_order_acquire)) fillMetaFromOutput();
    return info_;
  }
  WorkState state() const;
  int64_t scheduledNs() const;  // monotonicNowNs() clock; 0 when not reached
  int64_t startedNs() const;
  int64_t completedNs() const;
  void addObserver(std::shared_ptr<WorkObserver> observer);

 private:
  // ---- the backend that runs it (Note [Who completes a Work]) ---------------------
  friend class WorkCompletion;
  void markStarted();
  // Completes the Work (error == null: success). Idempotent: later calls are
  // ignored. Inside an execution bracket (Note [Work failure and the caller's
  // tensors]) an error is deferred to endExecution() and a success is ignored.
  void finish(std::exception_ptr error = nullptr);
  void setSourceRank(int rank);
  // Opens the execution bracket and marks the Work started. Returns false (and
  // opens nothing) when the Work already completed. `cancel` is called at most
  // once, under the Work's lock, with the failure that arrived inside the
  // bracket: it must not block and must not call into this Work.
  // `startedNs`: the monotonicNowNs() the caller read as it started (it times
  // its deadline from the same read: one clock read per operation, not two);
  // 0: read the clock here.
  using CancelFn = std::function<void(std::exception_ptr)>;
  bool beginExecution(CancelFn cancel, int64_t startedNs = 0);
  // Closes the bracket and completes the Work with `error`, or with the
  // failure deferred inside the bracket, which wins.
  void endExecution(std::exception_ptr error);
  // The bracket for an operation run on the issuing thread before the Work is
  // handed to anyone (Note [Unshared execution]): marks it started at
  // `startedNs`, then completes it with `error`, without the lock.
  void startUnshared(int64_t startedNs);
  void finishUnshared(std::exception_ptr error);
  // The queue this Work's operation waits in, and its ticket there: wait()
  // with a timeout no shorter than the operation's own runs the operation on
  // the waiting thread when it is next (Note [Waiting helps]). Call before
  // handing the Work to anyone but the backend.
  void setInlineRunner(std::weak_ptr<InlineRunner> runner, uint64_t ticket);

  void complete(std::exception_ptr error);
  // kScheduled -> kStarted with the lock held; copies the observers to notify.
  // Returns false (and changes nothing) when the Work was already started.
  // `nowNs`: the start time (0: read the clock).
  bool startLocked(std::vector<std::shared_ptr<WorkObserver>>& observers, int64_t nowNs = 0);
  // complete() under the lock the caller holds (it may release it).
  void completeLocked(std::unique_lock<std::mutex>& lock, std::exception_ptr error);
  // Blocks until released_ or `timeout` (DistTimeoutError naming the state).
  void waitReleased(Milliseconds timeout);
  void notify(WorkState state, const std::vector<std::shared_ptr<WorkObserver>>& observers);

  // Note [Tensor metadata on demand]: fills info_'s tensor metadata, once.
  void fillMetaFromOutput() const;

  // Changed after construction only by fillMetaFromOutput(), under metaMutex_.
  mutable WorkInfo info_;
  mutable std::atomic<bool> metaPending_{false};
  mutable std::mutex metaMutex_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  WorkState state_ = WorkState::kScheduled;                  // GUARDED_BY(mutex_)
  int64_t scheduledNs_ = 0, startedNs_ = 0, completedNs_ = 0;  // GUARDED_BY(mutex_)
  std::exception_ptr error_;                                 // GUARDED_BY(mutex_)
  // Waiters may return (after observers). Written under mutex_ with a release
  // store after error_, which never changes again: wait() on a finished Work
  // reads it (acquire) and error_ without taking the lock.
  std::atomic<bool> released_{false};
  bool executing_ = false;                                   // GUARDED_BY(mutex_)
  std::exception_ptr deferredError_;                         // GUARDED_BY(mutex_)
  CancelFn cancel_;                             // GUARDED_BY(mutex_)
  // The outputs: `output_` alone when the Work was made with one tensor, else
  // `outputs_` (outputList() gives either as a list).
  std::vector<Tensor> outputs_;
  Tensor output_;
  bool singleOutput_ = false;
  std::vector<Tensor> outputList() const;
  int sourceRank_ = -1;                                      // GUARDED_BY(mutex_)
  std::shared_ptr<Future> future_;                           // created on first use
  std::vector<std::shared_ptr<WorkObserver>> observers_;     // GUARDED_BY(mutex_)
  std::weak_ptr<InlineRunner> runner_;  // set once, before the Work is shared
  uint64_t ticket_ = 0;
};

using WorkPtr = std::shared_ptr<Work>;

// Builds the WorkInfo of an operation from its tensors (backends call this).
WorkInfo makeWorkInfo(const std::string& groupName, int rank, OpType opType, uint64_t seq,
                      const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                      Milliseconds timeout, int peer = -1, int tag = 0,
                      std::string_view reduceOp = {});
// The same from spans: a single-tensor operation passes std::span(&t, 1)
// instead of building two temporary vectors (Note [Per-operation cost]).
// The strings are copied straight into the WorkInfo (by value they would
// cost a move each on top).
WorkInfo makeWorkInfo(const std::string& groupName, int rank, OpType opType, uint64_t seq,
                      std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                      Milliseconds timeout, int peer = -1, int tag = 0,
                      std::string_view reduceOp = {});

}  // namespace distlab::comm
