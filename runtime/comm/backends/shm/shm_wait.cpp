#include "runtime/comm/backends/shm/shm_wait.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

#include "runtime/core/clock.hpp"

namespace distlab::comm::shm {

void futexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeoutNs) {
  timespec ts{static_cast<time_t>(timeoutNs / 1'000'000'000),
              static_cast<long>(timeoutNs % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void ring(std::atomic<uint32_t>& bell, std::atomic<uint32_t>& sleepers) {
  bell.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) > 0) futexWakeAll(&bell);
}

static inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void waitUntil(std::atomic<uint32_t>& bell, std::atomic<uint32_t>& sleepers,
               const std::function<bool()>& done, const std::function<void()>& poll,
               int64_t yieldNs) {
  if (done()) return;
  const int64_t start = monotonicNowNs();
  int64_t now = start;
  // Spin.
  while (now - start < kSpinNs) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return;
      cpuRelax();
    }
    now = monotonicNowNs();
  }
  // Yield. The first poll (syscalls: pidfds, clock) waits kFirstPollNs: a
  // short wait is never a failure, and polling early cost several us per step
  // when two ranks share a core.
  int64_t lastPoll = start - kPollIntervalNs + kFirstPollNs;
  while (now - start < yieldNs) {
    sched_yield();
    if (done()) return;
    now = monotonicNowNs();
    if (now - lastPoll > kPollIntervalNs) {
      poll();
      lastPoll = now;
    }
  }
  // Sleep on the bell.
  for (;;) {
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = bell.load(std::memory_order_seq_cst);
    if (done()) {
      sleepers.fetch_sub(1, std::memory_order_seq_cst);
      return;
    }
    futexWait(&bell, seen, kPollIntervalNs);
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (done()) return;
    now = monotonicNowNs();
    if (now - lastPoll >= kPollIntervalNs / 2) {
      poll();
      lastPoll = now;
    }
  }
}

}  // namespace distlab::comm::shm
