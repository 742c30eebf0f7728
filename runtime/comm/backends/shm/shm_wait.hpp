#pragma once
// Waiting on shared memory: spin briefly (or, when ranks outnumber cores,
// yield), then sleep on a futex.
//
// Note [shm waiting]
// A waiter must leave the cores to the work that needs them: the peer it waits
// for, and the caller's compute (DDP runs backward on the main thread while the
// progress thread waits in a bucket's allreduce). So no long spin or yield
// loop: a waiter spins for WaitPolicy::spinNs (a peer that holds a core answers
// within a few us: spinning then saves a futex round trip), then, only when
// the group has more ranks than this process may use cores, yields for up to
// WaitPolicy::yieldNs (with more ranks than cores a futex sleeper waits a
// scheduler slice per step, many times what yielding costs), then sleeps on a
// futex "bell". With more ranks than cores there is no spin at all: the rank
// waited for is as likely as not the one queued behind the spinner on its
// core. A 2 us spin there cost every step two spins per core: worlds 3-16 on
// two cores, the small all-reduce, barrier, all-gather and reduce-scatter took
// 0.4-0.75x the time without it (reports/collectives_shm_notes.md,
// 2026-12-07). Arrivals
// ring the bell only
// when somebody sleeps on it (ring() reads the sleeper count after its own
// store; a sleeper registers before its last check: Note [shm bell]), so the
// common, fast case costs no shared read-modify-write and no system call.
// The futex sleeps at most WaitPolicy::pollIntervalNs, so `poll` (deadline,
// dead peers, failure flags) runs at least that often (first after
// kFirstPollNs): a dead peer is seen within ~0.1 s in groups of up to 16
// ranks. A poll looks at every peer, so in larger groups the interval grows
// with the group (up to 1 s at 320 ranks and more): the group's polls then
// cost the same share of the machine at any size.
//
// Note [shm bell]
// Waker: publish the state (a release store), then ring(): a seq_cst fence,
// read `sleepers`, and only if non-zero bump `bell` and FUTEX_WAKE. Sleeper:
// sleepers++ (seq_cst), read `bell`, re-check done(), FUTEX_WAIT(bell, seen).
// Dekker: either the sleeper's re-check sees the state, or the waker sees the
// sleeper and bumps the bell, which makes the FUTEX_WAIT return at once.
#include <sched.h>

#include <atomic>
#include <cstdint>

#include "runtime/core/clock.hpp"

namespace distlab::comm::shm {

inline constexpr int64_t kPollIntervalNs = 50'000'000;
inline constexpr int64_t kLongestPollIntervalNs = 1'000'000'000;
inline constexpr int64_t kFirstPollNs = 1'000'000;
// Groups of more ranks count arrivals (Note [Wide groups count arrivals] in
// shm_op.hpp).
inline constexpr int kWideGroupRanks = 16;

struct WaitPolicy {
  int64_t spinNs = 10'000;
  int64_t yieldNs = 0;
  int64_t pollIntervalNs = kPollIntervalNs;
};
// The policy for a group of `ranks` processes on this machine: spin longer and
// never yield when every rank can hold a core; yield at once, up to 100 us,
// when ranks outnumber the cores this process may run on; sleep almost
// at once in wide groups (Note [Wide groups count arrivals] in shm_op.hpp),
// where hundreds of yielding ranks would take the cores from the ones that
// have work. The poll interval grows with `ranks` (Note [shm waiting]).
WaitPolicy waitPolicyFor(int ranks);

// futex on a word in (possibly shared) memory; not FUTEX_PRIVATE.
void futexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeoutNs);
void futexWakeAll(std::atomic<uint32_t>* word);

// Wakes the sleepers of `bell`, if any (Note [shm bell]). Call after the store
// that publishes what they wait for.
inline void ring(std::atomic<uint32_t>& bell, std::atomic<uint32_t>& sleepers) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) == 0) return;
  bell.fetch_add(1, std::memory_order_seq_cst);
  futexWakeAll(&bell);
}

// For waits whose done() watches the bell itself (the p2p engine waits for
// "anything new"): always bumps, wakes only when somebody sleeps.
inline void ringAlways(std::atomic<uint32_t>& bell, std::atomic<uint32_t>& sleepers) {
  bell.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) > 0) futexWakeAll(&bell);
}

// Polls a wait makes before its first clock read (see waitUntil).
inline constexpr int kPollsBeforeClock = 16;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Blocks until done() is true. `poll` runs kFirstPollNs into the wait, then
// every kPollIntervalNs; it throws to end the wait (deadline passed, peer
// died). done() must be cheap; both run on the calling thread. Templates, so
// the hot path allocates nothing.
template <class Done, class Poll>
void waitUntil(std::atomic<uint32_t>& bell, std::atomic<uint32_t>& sleepers, const Done& done,
               const Poll& poll, const WaitPolicy& policy) {
  // A peer in step arrives within a few polls: the first ones read no clock
  // (35 ns a read on the KVM guests measured, a third of a small step's
  // transfer), so the spin lasts up to kPollsBeforeClock polls longer.
  for (int i = 0; i < kPollsBeforeClock; ++i) {
    if (done()) return;
    cpuRelax();
  }
  const int64_t start = monotonicNowNs();
  int64_t now = start;
  while (now - start < policy.spinNs) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return;
      cpuRelax();
    }
    now = monotonicNowNs();
  }
  const int64_t interval = policy.pollIntervalNs;
  int64_t lastPoll = start - interval + kFirstPollNs;
  while (now - start < policy.spinNs + policy.yieldNs) {
    sched_yield();
    if (done()) return;
    now = monotonicNowNs();
  }
  for (;;) {
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = bell.load(std::memory_order_seq_cst);
    if (done()) {
      sleepers.fetch_sub(1, std::memory_order_seq_cst);
      return;
    }
    const int64_t untilPoll = lastPoll + interval - now;
    futexWait(&bell, seen, untilPoll > 0 ? untilPoll : 1);
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (done()) return;
    now = monotonicNowNs();
    if (now - lastPoll >= interval) {
      poll();
      lastPoll = now;
    }
  }
}

}  // namespace distlab::comm::shm
