#pragma once
// ProgressThread: runs a backend's operations one at a time in issue order on
// a dedicated thread, so callers overlap compute with communication
// (docs/DESIGN.md, "Asynchrony"). Shared by the CPU backends (shm, gloo).
//
// runOrEnqueue(fn, inlineOk): when inlineOk and nothing is queued or running,
// fn runs on the calling thread (a blocking call skips two thread hand-offs);
// otherwise it is queued and gets a ticket. Either way operations run strictly
// in the order they were submitted, never concurrently.
//
// Note [Waiting helps]
// A caller that waits for an operation that has not started yet would only
// sleep while this thread wakes up and runs it: two thread hand-offs (tens of
// us on a busy machine) and one more runnable thread competing for the cores.
// So Work::wait calls runIfNext(ticket): when the operation is at the head of
// the queue and nothing runs, the waiter takes it and runs it itself; this
// thread never sees it. Issue order is kept (only the head is taken, under the
// same lock as the thread's own pop), and the operation runs exactly the code
// it would have run here, so sequence numbers, observers, the flight recorder
// and timeouts see no difference.
//
// Note [Fresh tasks are left to their waiter]
// A caller that issues an operation and waits for it at once (a benchmark, a
// parameter broadcast, an optimizer's state exchange) reaches runIfNext a
// microsecond or two after queueing it. If this thread took the task in that
// window, the caller would sleep on the Work and pay a wake-up when it ends
// (the asynchronous path measured 10-70 % slower than the blocking one from
// 16 KiB). So the thread leaves a task queued less than `grace` ago to a
// waiter: it sleeps until the task is `grace` old and runs it then if nobody
// took it. A task nobody waits for (a DDP bucket, an FSDP prefetch) starts
// `grace` (plus the timer's slack, tens of us) late, which is small against
// the compute it overlaps (up to `parkFor` late right after waiters took
// theirs: Note [Parked while waiters keep up]); a task queued behind a
// running one is older than `grace` when its turn comes and starts at once.
//
// Waiting for work never spins (on a 2-core machine a spinning communication
// thread takes the core the caller or the peer rank needs). While operations
// keep coming (one queued in the last `pollFor`) the thread sleeps in short
// timed waits (`pollPeriod`) and queueing wakes nobody: a caller whose waits
// take its tasks pays no hand-off at all. After `pollFor` without a task it
// sleeps until woken, and the next queueing wakes it. A caller that finishes
// an operation inline wakes the thread when more tasks are queued. stop()
// drains nothing: queued tasks get `onDrop` (fail them) and the thread exits
// after the running task returns. Thread-safe.
//
// Note [Parked while waiters keep up]
// A caller that waits for each operation at once runs every task itself
// (Note [Waiting helps]); the thread has nothing to do, yet each of its polls
// is a wake-up that takes a core from a rank in the middle of a step, and the
// peer waiting on that rank then sleeps on the futex and pays a wake-up too:
// with 2 ranks on 2 cores, an asynchronous 2-4 MiB allreduce (several polls
// each) measured ~10 % slower than the blocking one, and as fast once the
// thread stopped waking. So a thread that wakes to find a caller running a
// task parks -- sleeps for up to `parkFor` -- instead of polling: nothing can
// start before that task ends. While parked it is woken only
//   - when the caller's task ends with more tasks queued (the backlog is the
//     thread's), or
//   - by queueing while nothing runs, unless the last task to leave the queue
//     was taken by its waiter (waiters keep up: this task's waiter will take
//     it too) and no queued task has outlived its grace (one that has is a
//     task nobody waits for).
// So a task nobody waits for, queued right after waiters took theirs, starts
// when the next task is queued behind it or the park ends (`parkFor`, not
// `grace`, late) -- once: the thread runs it, and waiters no longer count as
// keeping up until one takes a task again.
//
// Note [A waiter behind a queued task wakes the thread]
// A waiter whose task is queued behind one nobody waits for (FSDP issues a
// reduce-scatter without waiting, then waits for the next block's
// all-gather) cannot take its own, and would sleep until the parked thread's
// park ended: the queueing woke nobody, because waiters kept up. runIfNext
// then wakes a parked or sleeping thread and counts waiters as no longer
// keeping up, so the head starts at its grace. Measured in a traced FSDP
// scenario under Join: such a reduce-scatter started 1.46 ms after it was
// queued, the park's length, and held the peer in it as long.
//
// A task that runs long (a rank waiting in a collective for a peer that hangs
// runs it inline until the timeout) would make those parks a poll of 500
// wake-ups a second in every waiting rank. So each park that ends with the
// same caller still running doubles the next one, up to `parkLongest`; a park
// longer than `parkFor` ("long") is woken by any queueing while nothing runs,
// as a sleeping thread is, so the lateness bound above still holds.
//
// Note [Claimed without the lock]
// A blocking call on an idle queue claims the run with one compare-exchange
// and ends it with one atomic AND: two lock/unlock pairs were a measurable
// part of a small allreduce (reports/collectives_shm_notes.md). `claim_` holds
// kBusy (a task runs, on the thread or a caller) and kQueued (the queue is not
// empty), both changed only by atomic operations:
//   - only holders of the lock change the queue, and they keep kQueued equal
//     to !queue_.empty() (enqueue, takeHead, dropQueued);
//   - a claim without the lock succeeds only from 0, so while anything is
//     queued only a holder of the lock can claim the run, and it claims
//     after reading kBusy clear under the lock (takeHead);
//   - enqueue marks kQueued before it reads kBusy, in one atomic OR, and an
//     inline run ends with one atomic AND that returns whether kQueued was
//     set: of the two, whichever comes second sees the other, so either the
//     enqueue wakes a parked thread or the ending run does (taking the lock
//     first, so the thread cannot be between its check and its wait);
//   - drain() counts itself in `drainers_` before it reads kBusy, and an
//     ending run reads `drainers_` after clearing kBusy (sequentially
//     consistent): either drain() sees the run ended or the run signals it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "runtime/core/inline_task.hpp"
#include "runtime/core/ring_queue.hpp"

namespace distlab::comm {

// The thread's timing (Note [Fresh tasks are left to their waiter]); the
// defaults are what the backends use, tests pick others to observe each rule.
struct ProgressTiming {
  // A task this young is left to a waiter. A caller that waits at once reaches
  // runIfNext within a few us of queueing, even with the monitor and DETAIL
  // layers on; 20 us leaves it ample margin.
  std::chrono::nanoseconds grace{20'000};
  // How often the thread looks at the queue while operations keep coming, and
  // for how long after the last one it keeps looking before it sleeps until
  // woken. A poll costs a timer wake-up (a few us of a core): 5,000 a second
  // while busy, none when idle.
  std::chrono::microseconds pollPeriod{200};
  std::chrono::milliseconds pollFor{5};
  // The longest the thread stays parked while a caller runs tasks itself
  // (Note [Parked while waiters keep up]): one wake-up per 2 ms, not one per
  // poll, and at most 2 ms late for a task nobody waits for queued then.
  std::chrono::milliseconds parkFor{2};
  // The longest a park grows to while one caller's task keeps running: a
  // waiting rank's thread wakes ~8 times a second, not 500.
  std::chrono::milliseconds parkLongest{128};
};

// What Work::wait needs of a queue it may help (Note [Waiting helps]).
class InlineRunner {
 public:
  virtual ~InlineRunner() = default;
  // Runs the queued task `ticket` on the calling thread when it is next and
  // nothing runs; returns whether it did.
  virtual bool runIfNext(uint64_t ticket) = 0;
};

class ProgressThread : public InlineRunner {
 public:
  // Room for a backend's queued operation without an allocation (Note
  // [Per-operation cost] in work.hpp): the shm backend's closures -- the Work,
  // the body's tensors and options -- take up to 136 bytes.
  using Task = InlineTask<136>;

  explicit ProgressThread(std::string name, ProgressTiming timing = {});
  ~ProgressThread() override;  // stop()
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // A run on the calling thread that holds the queue: taken when nothing is
  // queued or running, it keeps every task behind it until it is destroyed
  // (a parked thread then takes over a backlog). False when not taken.
  class InlineRun {
   public:
    InlineRun() = default;  // not taken
    InlineRun(InlineRun&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)) {}
    InlineRun& operator=(InlineRun&&) = delete;
    ~InlineRun() {
      if (owner_ != nullptr) owner_->endInlineRun();
    }
    explicit operator bool() const { return owner_ != nullptr; }

   private:
    friend class ProgressThread;
    explicit InlineRun(ProgressThread* owner) : owner_(owner) {}  // kBusy already set
    ProgressThread* owner_ = nullptr;
  };
  InlineRun tryRunInline();
  // Queues `fn`; returns its ticket (never 0). `queuedAtNs`: monotonicNowNs()
  // when the caller read it already, 0 to read it here.
  uint64_t enqueue(Task fn, int64_t queuedAtNs = 0);
  // Returns 0 when fn ran inline (it has completed), else its ticket. A
  // callable that runs inline is called as it is, never wrapped in a Task
  // (Note [Per-operation cost] in work.hpp).
  template <typename Fn>
  uint64_t runOrEnqueue(Fn&& fn, bool inlineOk) {
    if (inlineOk) {
      if (InlineRun run = tryRunInline()) {
        fn();
        return 0;
      }
    }
    return enqueue(Task(std::forward<Fn>(fn)));
  }
  bool runIfNext(uint64_t ticket) override;
  // Hands queued tasks to `onDrop` (in order) instead of running them.
  void dropQueued(const std::function<void(Task&)>& onDrop);
  // Blocks until the queue is empty and nothing runs, or `timeout` passes;
  // returns whether it drained.
  bool drain(std::chrono::milliseconds timeout);
  void stop();
  bool idle() const;

 private:
  struct Queued {
    uint64_t ticket;
    int64_t queuedAtNs;  // monotonicNowNs(); Note [Fresh tasks are left to their waiter]
    Task fn;
  };
  static constexpr uint32_t kBusy = 1;    // claim_: a task runs (thread or inline)
  static constexpr uint32_t kQueued = 2;  // claim_: the queue is not empty
  void loop();
  bool waitForTask(std::unique_lock<std::mutex>& lock);
  bool running() const { return (claim_.load() & kBusy) != 0; }
  // Pops the head and claims the run for it; with the lock held and nothing
  // running (Note [Claimed without the lock]).
  Task takeHead();
  void endRun(std::unique_lock<std::mutex>& lock);  // locks, clears kBusy
  void signalDrainersIfIdle();                      // with the lock held
  // endRun for a task a caller ran on its own thread (InlineRun, runIfNext),
  // then wakes the thread when it must take over.
  void endInlineRun();

  std::string name_;
  const ProgressTiming timing_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;      // task queued / stop
  std::condition_variable idleCv_;  // queue drained
  RingQueue<Queued> queue_;         // GUARDED_BY(mutex_)
  std::atomic<uint32_t> claim_{0};  // kBusy | kQueued: Note [Claimed without the lock]
  bool stopping_ = false;           // GUARDED_BY(mutex_)
  uint64_t nextTicket_ = 1;         // GUARDED_BY(mutex_)
  int64_t lastQueuedAtNs_ = 0;      // GUARDED_BY(mutex_)
  bool sleeping_ = false;           // untimed sleep: queueing must wake it; GUARDED_BY(mutex_)
  bool parked_ = false;             // Note [Parked while waiters keep up]; GUARDED_BY(mutex_)
  bool parkedLong_ = false;         // parked longer than parkFor; GUARDED_BY(mutex_)
  bool waitersKeepUp_ = false;      // the last task left the queue to a waiter; GUARDED_BY(mutex_)
  std::atomic<int> drainers_{0};    // threads waiting in drain()
  std::thread thread_;
};

}  // namespace distlab::comm
