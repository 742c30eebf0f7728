#pragma once
// ProgressThread: runs a backend's operations one at a time in issue order on
// a dedicated thread, so callers overlap compute with communication
// (DESIGN.md "Asynchrony"). Shared by the CPU backends (shm, gloo).
//
// runOrEnqueue(fn, inlineOk): when inlineOk and nothing is queued or running,
// fn runs on the calling thread (a blocking call skips two thread hand-offs);
// otherwise it is queued. Either way operations run strictly in the order they
// were submitted, never concurrently.
//
// Waiting for work: the thread spins briefly, yields, then sleeps on a
// condition variable, so a burst of small operations is picked up in
// microseconds without burning a core when idle.
// stop() drains nothing: queued tasks get `onDrop` (fail them) and the thread
// exits after the running task returns. Thread-safe.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace distlab::comm {

class ProgressThread {
 public:
  using Task = std::function<void()>;

  explicit ProgressThread(std::string name);
  ~ProgressThread();  // stop()
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // Returns true when fn ran inline (it has completed).
  bool runOrEnqueue(Task fn, bool inlineOk);
  // Hands queued tasks to `onDrop` (in order) instead of running them.
  void dropQueued(const std::function<void(Task&)>& onDrop);
  // Blocks until the queue is empty and nothing runs, or `timeout` passes;
  // returns whether it drained.
  bool drain(std::chrono::milliseconds timeout);
  void stop();
  bool idle() const;

 private:
  void loop();
  bool waitForTask(std::unique_lock<std::mutex>& lock);

  std::string name_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;      // task queued / stop
  std::condition_variable idleCv_;  // queue drained
  std::deque<Task> queue_;          // GUARDED_BY(mutex_)
  bool busy_ = false;               // a task runs (thread or inline); GUARDED_BY(mutex_)
  bool stopping_ = false;           // GUARDED_BY(mutex_)
  std::atomic<uint64_t> submitted_{0};
  std::atomic<bool> sleeping_{false};
  std::thread thread_;
};

}  // namespace distlab::comm
