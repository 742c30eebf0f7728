#include "runtime/comm/backends/shm/shm_wait.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <ctime>

namespace distlab::comm::shm {

WaitPolicy waitPolicyFor(int ranks) {
  cpu_set_t set;
  int cores = 1;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  const int64_t poll =
      std::min(kLongestPollIntervalNs, kPollIntervalNs * std::max(1, ranks / 16));
  if (ranks <= cores) return WaitPolicy{10'000, 0, poll};
  if (ranks > kWideGroupRanks) return WaitPolicy{1'000, 0, poll};
  return WaitPolicy{0, 100'000, poll};
}

void futexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeoutNs) {
  timespec ts{static_cast<time_t>(timeoutNs / 1'000'000'000),
              static_cast<long>(timeoutNs % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace distlab::comm::shm
