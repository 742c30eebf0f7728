#include "runtime/comm/progress_thread.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::comm {

ProgressThread::ProgressThread(std::string name, ProgressTiming timing)
    : name_(std::move(name)), timing_(timing) {
  if (timing_.grace.count() < 0 || timing_.pollPeriod.count() <= 0 || timing_.pollFor.count() < 0 ||
      timing_.parkFor.count() <= 0 || timing_.parkLongest < timing_.parkFor) {
    throw ValueError(fmt::format(
        "ProgressThread {}: timing needs grace >= 0, pollPeriod > 0, pollFor >= 0, "
        "parkFor > 0 and parkLongest >= parkFor (got {} ns, {} us, {} ms, {} ms, {} ms)",
        name_, timing_.grace.count(), timing_.pollPeriod.count(), timing_.pollFor.count(),
        timing_.parkFor.count(), timing_.parkLongest.count()));
  }
  thread_ = std::thread([this] {
    trace::nameThisThread("progress " + name_);  // runtime/core/trace.hpp
    loop();
  });
}

ProgressThread::~ProgressThread() { stop(); }

ProgressThread::Task ProgressThread::takeHead() {
  Task fn = std::move(queue_.front().fn);
  queue_.pop_front();
  // Nothing else changes the word now: only holders of the lock queue, and a
  // claim without it needs the word to be 0 (Note [Claimed without the lock]).
  claim_.store(kBusy | (queue_.empty() ? 0u : kQueued));
  return fn;
}

void ProgressThread::signalDrainersIfIdle() {
  // Only drain() waits on idleCv_: the common case (nobody drains) skips the signal.
  if (queue_.empty() && drainers_.load() > 0) idleCv_.notify_all();
}

void ProgressThread::endRun(std::unique_lock<std::mutex>& lock) {
  lock.lock();
  claim_.fetch_and(~kBusy);
  signalDrainersIfIdle();
}

void ProgressThread::endInlineRun() {
  const uint32_t before = claim_.fetch_and(~kBusy);
  // Note [Claimed without the lock]: the lock is taken only when somebody
  // must hear of the end -- a backlog for the thread, or a drain().
  if ((before & kQueued) == 0 && drainers_.load() == 0) return;
  std::unique_lock<std::mutex> lock(mutex_);
  signalDrainersIfIdle();
  // A waiter that ran a task inline hands the rest of the queue back (Note
  // [Parked while waiters keep up]); outside the lock, so the woken thread
  // finds it free. With nothing queued it leaves a parked thread asleep.
  const bool wake = !queue_.empty();
  lock.unlock();
  if (wake) cv_.notify_one();
}

ProgressThread::InlineRun ProgressThread::tryRunInline() {
  uint32_t idle = 0;  // nothing queued, nothing running
  if (!claim_.compare_exchange_strong(idle, kBusy)) return InlineRun();
  return InlineRun(this);
}

uint64_t ProgressThread::enqueue(Task fn, int64_t queuedAtNs) {
  const int64_t now = queuedAtNs != 0 ? queuedAtNs : monotonicNowNs();
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t ticket = nextTicket_++;
  // Note [Parked while waiters keep up]. A polling thread finds the task itself.
  const bool headOutlivedGrace =
      !queue_.empty() && now - queue_.front().queuedAtNs >= timing_.grace.count();
  // Marked queued before anything reads whether a task runs: an inline run
  // that ends after this sees the mark and wakes the thread itself.
  const bool busy = (claim_.fetch_or(kQueued) & kBusy) != 0;
  const bool wake =
      sleeping_ || (parked_ && !busy && (parkedLong_ || !waitersKeepUp_ || headOutlivedGrace));
  lastQueuedAtNs_ = now;
  Queued& slot = queue_.emplace_back();  // filled in place: a Task move is ~40 instructions
  slot.ticket = ticket;
  slot.queuedAtNs = now;
  slot.fn = std::move(fn);
  lock.unlock();
  if (wake) cv_.notify_one();  // outside the lock: the thread wakes to a free mutex
  return ticket;
}

bool ProgressThread::runIfNext(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (running() || stopping_ || queue_.empty()) return false;
  if (queue_.front().ticket != ticket) {
    // Note [A waiter behind a queued task wakes the thread].
    waitersKeepUp_ = false;
    const bool wake = parked_ || sleeping_;
    lock.unlock();
    if (wake) cv_.notify_one();
    return false;
  }
  Task fn = takeHead();
  waitersKeepUp_ = true;
  lock.unlock();
  InlineRun run(this);
  fn();
  return true;
}

void ProgressThread::dropQueued(const std::function<void(Task&)>& onDrop) {
  RingQueue<Queued> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped = std::move(queue_);
    claim_.fetch_and(~kQueued);
  }
  for (; !dropped.empty(); dropped.pop_front()) onDrop(dropped.front().fn);
  idleCv_.notify_all();
}

bool ProgressThread::drain(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  drainers_.fetch_add(1);  // before reading the word: Note [Claimed without the lock]
  const bool idle = idleCv_.wait_for(lock, timeout, [&] { return queue_.empty() && !running(); });
  drainers_.fetch_sub(1);
  return idle;
}

bool ProgressThread::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.empty() && !running();
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
  std::chrono::milliseconds park = timing_.parkFor;  // doubles while one caller keeps running
  while (!stopping_) {
    const int64_t now = monotonicNowNs();
    if (running()) {  // a caller runs a task: Note [Parked while waiters keep up]
      parked_ = true;
      parkedLong_ = park > timing_.parkFor;
      cv_.wait_for(lock, park);
      parked_ = parkedLong_ = false;
      park = std::min(park * 2, timing_.parkLongest);
      continue;
    }
    park = timing_.parkFor;
    if (!queue_.empty()) {
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
    Task task = takeHead();
    waitersKeepUp_ = false;  // nobody took it within its grace
    lock.unlock();
    task();
    endRun(lock);  // nobody else waits on cv_: no wake-up
  }
}

}  // namespace distlab::comm
