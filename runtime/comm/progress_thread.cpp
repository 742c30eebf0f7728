#include "runtime/comm/progress_thread.hpp"

#include <sched.h>

#include <chrono>

#include "runtime/core/clock.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::comm {
namespace {
// How long the idle thread keeps looking for new work before it sleeps: long
// enough to catch the next operation of a tight loop, short enough not to
// steal a core from compute for long.
constexpr int64_t kSpinNs = 20'000;
constexpr int64_t kYieldNs = 200'000;
}  // namespace

ProgressThread::ProgressThread(std::string name) : name_(std::move(name)) {
  thread_ = std::thread([this] {
    trace::nameThisThread("progress " + name_);  // runtime/core/trace.hpp
    loop();
  });
}

ProgressThread::~ProgressThread() { stop(); }

bool ProgressThread::runOrEnqueue(Task fn, bool inlineOk) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!(inlineOk && queue_.empty() && !busy_)) {
      queue_.push_back(std::move(fn));
      submitted_.fetch_add(1, std::memory_order_release);
      if (sleeping_.load(std::memory_order_acquire)) cv_.notify_one();
      return false;
    }
    busy_ = true;
  }
  fn();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
    if (!queue_.empty()) cv_.notify_one();
    if (queue_.empty()) idleCv_.notify_all();
  }
  return true;
}

void ProgressThread::dropQueued(const std::function<void(Task&)>& onDrop) {
  std::deque<Task> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped.swap(queue_);
  }
  for (auto& t : dropped) onDrop(t);
  idleCv_.notify_all();
}

bool ProgressThread::drain(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return idleCv_.wait_for(lock, timeout, [&] { return queue_.empty() && !busy_; });
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
    const int64_t idleNs = monotonicNowNs() - start;
    if (idleNs < kSpinNs + kYieldNs) {
      const uint64_t seen = submitted_.load(std::memory_order_acquire);
      lock.unlock();
      if (idleNs >= kSpinNs) sched_yield();
      while (submitted_.load(std::memory_order_acquire) == seen &&
             monotonicNowNs() - start < kSpinNs) {
      }
      lock.lock();
      continue;
    }
    sleeping_.store(true, std::memory_order_release);
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    sleeping_.store(false, std::memory_order_release);
  }
  return !stopping_;
}

void ProgressThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (waitForTask(lock)) {
    Task task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    task();
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idleCv_.notify_all();
  }
}

}  // namespace distlab::comm
