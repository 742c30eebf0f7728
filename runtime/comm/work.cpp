#include "runtime/comm/work.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/comm/progress_thread.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {

std::string_view workStateName(WorkState state) {
  switch (state) {
    case WorkState::kScheduled: return "scheduled";
    case WorkState::kStarted: return "started";
    case WorkState::kCompleted: return "completed";
    case WorkState::kFailed: return "failed";
  }
  return "unknown";
}

std::string WorkInfo::describe() const {
  std::string out = fmt::format("{}(seq {}, group '{}', rank {}", opTypeName(opType), seq,
                                groupName, rank);
  if (peer >= 0) out += (isPointToPoint(opType) ? ", peer " : ", root ") + std::to_string(peer);
  if (isPointToPoint(opType)) out += fmt::format(", tag {}", tag);
  if (!inputs.empty()) {
    out += fmt::format(", {} elements in x {}", numelIn, dtypeName(inputs.dtype(0)));
  }
  if (!reduceOp.empty()) out += ", op " + reduceOp;
  return out + ")";
}

WorkInfo makeWorkInfo(const std::string& groupName, int rank, OpType opType, uint64_t seq,
                      const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                      Milliseconds timeout, int peer, int tag, std::string_view reduceOp) {
  return makeWorkInfo(groupName, rank, opType, seq, std::span<const Tensor>(inputs),
                      std::span<const Tensor>(outputs), timeout, peer, tag, reduceOp);
}

WorkInfo makeWorkInfo(const std::string& groupName, int rank, OpType opType, uint64_t seq,
                      std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                      Milliseconds timeout, int peer, int tag, std::string_view reduceOp) {
  WorkInfo info;
  info.groupName = groupName;
  info.rank = rank;
  info.opType = opType;
  info.seq = seq;
  info.peer = peer;
  info.tag = tag;
  info.reduceOp = reduceOp;
  info.timeout = timeout;
  for (const auto& t : inputs) {
    if (!t.defined()) continue;
    info.numelIn += t.numel();
    info.inputs.push(t);
  }
  for (const auto& t : outputs) {
    if (!t.defined()) continue;
    info.numelOut += t.numel();
    info.outputs.push(t);
  }
  return info;
}

Work::Work(WorkInfo info, std::vector<Tensor> outputs, int64_t scheduledNs)
    : Work(std::in_place, [&] { return std::move(info); }, std::move(outputs), scheduledNs) {}

Work::Work(WorkInfo&& info, Tensor output, int64_t scheduledNs)
    : Work(std::in_place, [&] { return std::move(info); }, std::move(output), scheduledNs) {}

Work::~Work() = default;

void Work::fillMetaFromOutput() const {
  // Its own lock, not mutex_: info() is called with mutex_ held (waitReleased).
  // A std::call_once costs ~290 instructions here, this ~40.
  std::lock_guard<std::mutex> lock(metaMutex_);
  if (!metaPending_.load(std::memory_order_relaxed)) return;  // another thread filled it
  if (output_.defined()) {  // as makeWorkInfo: no entry for an undefined tensor
    info_.inputs.push(output_);
    info_.outputs = info_.inputs;
    info_.numelIn = info_.numelOut = output_.numel();
  }
  metaPending_.store(false, std::memory_order_release);
}

std::vector<Tensor> Work::outputList() const {
  return singleOutput_ ? std::vector<Tensor>{output_} : outputs_;
}

std::shared_ptr<Work> Work::completed(WorkInfo info, std::vector<Tensor> outputs) {
  auto work = std::make_shared<Work>(std::move(info), std::move(outputs));
  work->markStarted();
  work->finish();
  return work;
}

bool Work::isCompleted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_ == WorkState::kCompleted || state_ == WorkState::kFailed;
}

bool Work::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_ == WorkState::kCompleted;
}

std::exception_ptr Work::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

int Work::sourceRank() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sourceRank_;
}

std::vector<Tensor> Work::result() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_ == WorkState::kCompleted ? outputList() : std::vector<Tensor>{};
}

void Work::setInlineRunner(std::weak_ptr<InlineRunner> runner, uint64_t ticket) {
  runner_ = std::move(runner);
  ticket_ = ticket;
}

namespace {

// Note [Waiting helps]: runs the queued operation `ticket` on the waiting
// thread when it is next, and only when the operation's own deadline (`own`)
// ends the run before the wait's would (running it cannot overrun `wait`).
void runIfNextWithin(const std::weak_ptr<InlineRunner>& runner, uint64_t ticket,
                     Milliseconds own, Milliseconds wait) {
  if (ticket == 0 || wait < own) return;
  if (auto r = runner.lock()) r->runIfNext(ticket);
}

}  // namespace

bool Work::wait(Milliseconds timeout) {
  // Note [Work completion order]: released_ is set after the observers ran.
  // Checked first, without the lock: a finished operation needs neither the
  // lock nor a deadline (no clock read).
  if (!released_.load(std::memory_order_acquire)) {
    if (timeout < Milliseconds(0)) timeout = info_.timeout + Milliseconds(5000);
    runIfNextWithin(runner_, ticket_, info_.timeout, timeout);
    // Ran here: finished without the lock and the deadline's clock read.
    if (!released_.load(std::memory_order_acquire)) waitReleased(timeout);
  }
  if (error_) std::rethrow_exception(error_);
  return true;
}

void Work::waitReleased(Milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool done = cv_.wait_for(lock, timeout, [&] { return released_.load(); });
  if (!done) {
    throw DistTimeoutError(fmt::format("Work::wait timed out after {} ms: {} is still {}",
                                       timeout.count(), info().describe(),
                                       workStateName(state_)));
  }
}

std::shared_ptr<Future> Work::getFuture() {
  std::shared_ptr<Future> future;
  bool done = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (future_) return future_;
    future_ = std::make_shared<Future>();
    future = future_;
    done = released_.load();  // else complete() still completes future_
  }
  if (!done && ticket_ != 0) {  // Note [Waiting on a Work's future helps]
    future->setWaitHelp([runner = runner_, ticket = ticket_,
                         own = info_.timeout](Milliseconds timeout) {
      runIfNextWithin(runner, ticket, own, timeout);
    });
  }
  if (done) {
    if (error_) {
      future->setError(error_);
    } else {
      future->markCompleted(outputList());
    }
  }
  return future;
}

void Work::abort(const std::string& reason) {
  abort(std::make_exception_ptr(
      DistBackendError(fmt::format("{} aborted: {}", info().describe(), reason))));
}

void Work::abort(std::exception_ptr error) {
  DL_CHECK(error != nullptr, "Work::abort: ", info().describe(), " needs an error to fail with");
  finish(std::move(error));
}

WorkState Work::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}
int64_t Work::scheduledNs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::max<int64_t>(scheduledNs_, 0);  // kScheduledAtStart before it started: not reached
}
int64_t Work::startedNs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return startedNs_;
}
int64_t Work::completedNs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completedNs_;
}

void Work::addObserver(std::shared_ptr<WorkObserver> observer) {
  WorkState reached;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reached = state_;
    // A finished Work notifies nobody again: keeping the observer would hold
    // whatever it holds (a decorator's outer Work, which holds this one) in
    // a reference cycle.
    bool finished = reached == WorkState::kCompleted || reached == WorkState::kFailed;
    if (!finished) observers_.push_back(observer);
  }
  // Replay transitions made before the observer arrived. A transition racing
  // with this call may be reported twice; observers tolerate repeats.
  observer->onScheduled(*this);
  if (reached != WorkState::kScheduled) observer->onStarted(*this);
  if (reached == WorkState::kCompleted || reached == WorkState::kFailed) {
    observer->onCompleted(*this);
  }
}

bool Work::startLocked(std::vector<std::shared_ptr<WorkObserver>>& observers, int64_t nowNs) {
  if (state_ != WorkState::kScheduled) return false;
  state_ = WorkState::kStarted;
  startedNs_ = nowNs != 0 ? nowNs : monotonicNowNs();
  if (scheduledNs_ == kScheduledAtStart) scheduledNs_ = startedNs_;
  observers = observers_;
  return true;
}

void Work::markStarted() {
  std::vector<std::shared_ptr<WorkObserver>> observers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!startLocked(observers)) return;
  }
  notify(WorkState::kStarted, observers);
}

void Work::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ == WorkState::kCompleted || state_ == WorkState::kFailed) return;
    if (executing_) {
      // Note [Work failure and the caller's tensors]: published by endExecution().
      if (error && !deferredError_) {
        deferredError_ = error;
        if (cancel_) cancel_(error);
        cancel_ = nullptr;
      }
      return;
    }
  }
  complete(std::move(error));
}

bool Work::beginExecution(CancelFn cancel, int64_t startedNs) {
  std::vector<std::shared_ptr<WorkObserver>> observers;
  {
    // One lock for the bracket and the start (Note [Per-operation cost]).
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ == WorkState::kCompleted || state_ == WorkState::kFailed) return false;
    executing_ = true;
    cancel_ = std::move(cancel);
    if (!startLocked(observers, startedNs)) return true;  // markStarted() came first
  }
  notify(WorkState::kStarted, observers);
  return true;
}

void Work::endExecution(std::exception_ptr error) {
  std::unique_lock<std::mutex> lock(mutex_);
  executing_ = false;
  cancel_ = nullptr;
  if (deferredError_) error = deferredError_;
  completeLocked(lock, std::move(error));
}

void Work::complete(std::exception_ptr error) {
  std::unique_lock<std::mutex> lock(mutex_);
  completeLocked(lock, std::move(error));
}

void Work::completeLocked(std::unique_lock<std::mutex>& lock, std::exception_ptr error) {
  if (state_ == WorkState::kCompleted || state_ == WorkState::kFailed) return;
  completedNs_ = monotonicNowNs();
  if (startedNs_ == 0) startedNs_ = completedNs_;
  if (scheduledNs_ == kScheduledAtStart) scheduledNs_ = startedNs_;
  error_ = error;
  state_ = error ? WorkState::kFailed : WorkState::kCompleted;
  // Moved, not copied (no transition follows completion): one allocation and
  // two atomic updates per observer less on the monitored path.
  std::vector<std::shared_ptr<WorkObserver>> observers = std::move(observers_);
  observers_.clear();
  std::shared_ptr<Future> future;
  // No observer to run first: waiters may go at once (one lock, not two).
  // An observer added from now on replays the completion itself.
  if (observers.empty()) {
    released_.store(true, std::memory_order_release);
    future = future_;
  }
  lock.unlock();
  if (!observers.empty()) {
    // Note [Work completion order]: observers, then waiters, then the Future.
    notify(WorkState::kCompleted, observers);
    lock.lock();
    released_.store(true, std::memory_order_release);
    future = future_;
    lock.unlock();
  }
  cv_.notify_all();
  if (future) {
    if (error) {
      future->setError(error);
    } else {
      future->markCompleted(outputList());
    }
  }
}

void Work::startUnshared(int64_t startedNs) {
  // What sharing leaves behind, read without an atomic read-modify-write
  // (use_count() through weak_from_this() would cost two).
  DL_CHECK(observers_.empty() && !future_ && ticket_ == 0,
           "Work::startUnshared: ", info().describe(),
           " is already observed, awaited through a Future or queued");
  state_ = WorkState::kStarted;
  startedNs_ = startedNs;
  if (scheduledNs_ == kScheduledAtStart) scheduledNs_ = startedNs;
}

void Work::finishUnshared(std::exception_ptr error) {
  completedNs_ = monotonicNowNs();
  error_ = std::move(error);
  state_ = error_ ? WorkState::kFailed : WorkState::kCompleted;
  released_.store(true, std::memory_order_release);  // handed over with the Work
}

void Work::setSourceRank(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  sourceRank_ = rank;
}

void Work::notify(WorkState state, const std::vector<std::shared_ptr<WorkObserver>>& observers) {
  for (const auto& o : observers) {
    if (state == WorkState::kStarted) o->onStarted(*this);
    if (state == WorkState::kCompleted) o->onCompleted(*this);
  }
}

}  // namespace distlab::comm
