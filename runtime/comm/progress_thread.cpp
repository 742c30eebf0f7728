#include "runtime/comm/progress_thread.hpp"

#include <chrono>

#include "runtime/core/clock.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::comm {
namespace {
// How long the idle thread keeps looking for new work before it sleeps: the
// next operation of a burst (DDP launches buckets back to back) is picked up
// without a wake-up, and an idle thread gives its core back within 20 us.
constexpr int64_t kSpinNs = 20'000;
}  // namespace

ProgressThread::ProgressThread(std::string name) : name_(std::move(name)) {
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
  if (!queue_.empty() && sleeping_) cv_.notify_one();
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
  queue_.push_back(Queued{ticket, std::move(fn)});
  submitted_.fetch_add(1, std::memory_order_release);
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

// Returns with the lock held and either a runnable task at the queue head or
// stopping_ set.
bool ProgressThread::waitForTask(std::unique_lock<std::mutex>& lock) {
  const int64_t start = monotonicNowNs();
  while (!stopping_ && (queue_.empty() || busy_)) {
    if (monotonicNowNs() - start < kSpinNs) {
      const uint64_t seen = submitted_.load(std::memory_order_acquire);
      lock.unlock();
      while (submitted_.load(std::memory_order_acquire) == seen &&
             monotonicNowNs() - start < kSpinNs) {
      }
      lock.lock();
      continue;
    }
    sleeping_ = true;
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    sleeping_ = false;
  }
  return !stopping_;
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
