#include "runtime/comm/progress_thread.hpp"

#include <chrono>

#include <fmt/format.h>

#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::comm {

ProgressThread::ProgressThread(std::string name, ProgressTiming timing)
    : name_(std::move(name)), timing_(timing) {
  if (timing_.grace.count() < 0 || timing_.pollPeriod.count() <= 0 ||
      timing_.pollFor.count() < 0) {
    throw ValueError(fmt::format(
        "ProgressThread {}: timing needs grace >= 0, pollPeriod > 0 and pollFor >= 0 "
        "(got {} ns, {} us, {} ms)",
        name_, timing_.grace.count(), timing_.pollPeriod.count(), timing_.pollFor.count()));
  }
  thread_ = std::thread([this] {
    trace::nameThisThread("progress " + name_);  // runtime/core/trace.hpp
    loop();
  });
}

ProgressThread::~ProgressThread() { stop(); }

void ProgressThread::beginRun(std::unique_lock<std::mutex>& lock) {
  busy_ = true;
  lock.unlock();
}

void ProgressThread::endRun(std::unique_lock<std::mutex>& lock) {
  lock.lock();
  busy_ = false;
  // A waiter that ran a task inline hands the rest of the queue back; for the
  // thread itself this finds no waiter on cv_ and costs no system call.
  if (!queue_.empty()) cv_.notify_one();
  // Only drain() waits on idleCv_: the common case (nobody drains) skips the signal.
  if (queue_.empty() && drainers_ > 0) idleCv_.notify_all();
}

void ProgressThread::runLocked(std::unique_lock<std::mutex>& lock, Task& fn) {
  beginRun(lock);
  fn();
  endRun(lock);
}

uint64_t ProgressThread::enqueueLocked(Task fn) {
  const uint64_t ticket = nextTicket_++;
  lastQueuedAtNs_ = monotonicNowNs();
  queue_.push_back(Queued{ticket, lastQueuedAtNs_, std::move(fn)});
  return ticket;
}

bool ProgressThread::runIfNext(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (busy_ || stopping_ || queue_.empty() || queue_.front().ticket != ticket) return false;
  Task fn = std::move(queue_.front().fn);
  queue_.pop_front();
  runLocked(lock, fn);
  return true;
}

void ProgressThread::dropQueued(const std::function<void(Task&)>& onDrop) {
  std::deque<Queued> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped.swap(queue_);
  }
  for (auto& q : dropped) onDrop(q.fn);
  idleCv_.notify_all();
}

bool ProgressThread::drain(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  ++drainers_;
  const bool idle = idleCv_.wait_for(lock, timeout, [&] { return queue_.empty() && !busy_; });
  --drainers_;
  return idle;
}

bool ProgressThread::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.empty() && !busy_;
}

void ProgressThread::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// Returns with the lock held and either a task at the queue head that is due
// (Note [Fresh tasks are left to their waiter]) or stopping_ set.
bool ProgressThread::waitForTask(std::unique_lock<std::mutex>& lock) {
  using std::chrono::nanoseconds;
  while (!stopping_) {
    const int64_t now = monotonicNowNs();
    if (!queue_.empty() && !busy_) {
      const int64_t due = queue_.front().queuedAtNs + timing_.grace.count();
      if (now >= due) return true;
      cv_.wait_for(lock, nanoseconds(due - now));
    } else if (now - lastQueuedAtNs_ < nanoseconds(timing_.pollFor).count()) {
      cv_.wait_for(lock, timing_.pollPeriod);
    } else {
      sleeping_ = true;
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      sleeping_ = false;
    }
  }
  return false;
}

void ProgressThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (waitForTask(lock)) {
    Task task = std::move(queue_.front().fn);
    queue_.pop_front();
    runLocked(lock, task);
  }
}

}  // namespace distlab::comm
