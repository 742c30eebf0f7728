#include "runtime/comm/backends/nccl/nccl_work.hpp"

#include <fmt/format.h>

#include "runtime/comm/work_completion.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm::nccl_backend {

NcclWork::NcclWork(WorkInfo info, std::vector<Tensor> outputs, cuda::Event end, int device,
                   bool hostWait, std::function<void(const std::string&)> onTimeout)
    : Work(std::move(info), std::move(outputs)),
      end_(std::move(end)),
      device_(device),
      hostWait_(hostWait),
      onTimeout_(std::move(onTimeout)) {}

bool NcclWork::wait(Milliseconds timeout) {
  if (hostWait_) {
    try {
      return Work::wait(timeout);
    } catch (const DistTimeoutError& e) {
      if (onTimeout_) onTimeout_(e.what());  // blocking wait: a timeout aborts the communicator
      throw;
    }
  }
  if (isCompleted()) {
    if (!isSuccess()) std::rethrow_exception(exception());
    return true;
  }
  end_.block(cuda::currentStream(device_));  // the caller's stream waits, the host does not
  return true;
}

CompletionThread::CompletionThread(std::string groupName,
                                   std::function<std::optional<std::string>()> checkHealth,
                                   std::function<void(const FailureReason&)> markFailed,
                                   std::function<void(const std::string&)> abort)
    : groupName_(std::move(groupName)),
      checkHealth_(std::move(checkHealth)),
      markFailed_(std::move(markFailed)),
      abort_(std::move(abort)),
      thread_([this] { loop(); }) {}

CompletionThread::~CompletionThread() { stop(); }

void CompletionThread::add(std::shared_ptr<NcclWork> work, std::vector<Tensor> keep) {
  const Deadline deadline = Deadline::after(work->info().timeout);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({std::move(work), std::move(keep), deadline});
  }
  cv_.notify_all();
}

void CompletionThread::failAll(const std::string& reason) {
  std::deque<Pending> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failed.swap(pending_);
  }
  for (auto& p : failed) {
    WorkCompletion::finish(*p.work, std::make_exception_ptr(DistBackendError(fmt::format(
        "{}: group '{}': {}", p.work->info().describe(), groupName_, reason))));
  }
  drained_.notify_all();
}

bool CompletionThread::drain(Milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return drained_.wait_for(lock, timeout, [&] { return pending_.empty(); });
}

void CompletionThread::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CompletionThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (pending_.empty()) {
      drained_.notify_all();
      cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      continue;
    }
    lock.unlock();
    const bool more = pollOnce();
    lock.lock();
    if (more) cv_.wait_for(lock, std::chrono::microseconds(200), [&] { return stop_; });
  }
}

// What became of `work`: nullopt while it runs within its deadline; else
// its error (null: success) and, when it timed out, the timeout message.
std::optional<CompletionThread::Outcome> CompletionThread::outcomeOf(const NcclWork& work,
                                                                     const Deadline& deadline) {
  try {
    if (work.endEvent().query()) return Outcome{};
  } catch (const std::exception& e) {  // a CUDA error: the operation and the group failed
    const std::string msg =
        fmt::format("{}: group '{}': {}", work.info().describe(), groupName_, e.what());
    markFailed_({FailureReason::kBackendError, msg});
    return Outcome{std::make_exception_ptr(DistBackendError(msg)), ""};
  }
  if (!deadline.expired()) return std::nullopt;
  const WorkInfo& wi = work.info();
  const std::string msg =
      fmt::format("{}: rank {}: timed out after {} ms; the NCCL communicator was aborted",
                  wi.describe(), wi.rank, wi.timeout.count());
  return Outcome{std::make_exception_ptr(DistTimeoutError(msg)), msg};
}

// Finishes the done Works at the front (they complete in issue order on the
// one stream). True while the front one is still running.
bool CompletionThread::pollOnce() {
  if (auto error = checkHealth_()) {
    markFailed_({FailureReason::kBackendError, "NCCL error: " + *error});
    failAll("NCCL error: " + *error);
    abort_("NCCL error: " + *error);
    return false;
  }
  for (;;) {
    std::shared_ptr<NcclWork> work;
    Deadline deadline = Deadline::after(Milliseconds(0));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (pending_.empty()) return false;
      work = pending_.front().work;
      deadline = pending_.front().deadline;
    }
    const std::optional<Outcome> outcome = outcomeOf(*work, deadline);
    if (!outcome) return true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!pending_.empty() && pending_.front().work == work) pending_.pop_front();
    }
    // The group is marked failed before the Work fails, so whoever sees the
    // failure finds the group refusing work; abort_ (which may block, Note
    // [NCCL abort may block]) comes after. Popped already: its failAll does
    // not name this Work.
    if (!outcome->timeout.empty()) markFailed_({FailureReason::kTimeout, outcome->timeout});
    WorkCompletion::finish(*work, outcome->error);
    if (!outcome->timeout.empty()) {
      abort_(outcome->timeout);
      return false;
    }
  }
}

}  // namespace distlab::comm::nccl_backend
