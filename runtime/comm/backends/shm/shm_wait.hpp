#pragma once
// Waiting on shared memory: spin briefly, then yield, then sleep on a futex.
//
// Note [shm waiting]
// With as many ranks as cores, a peer answers in well under a microsecond and
// spinning wins. With more ranks than cores (4 or 8 ranks on 2 cores here), a
// spinning waiter holds the core the peer needs: pure spinning measured 12 ms
// per tiny allreduce at 4 ranks, futex-only 76 us, spin+yield 9 us. So: spin for
// kSpinNs, yield until kYieldNs (long: on a busy machine a futex sleeper waits
// for a whole scheduler slice to run again; 2 ms cost 4x at 2 MiB allreduce), then futex-wait on a "bell" word that every
// arrival bumps (the waker only pays for FUTEX_WAKE when someone sleeps).
// The futex sleeps at most kPollInterval, so `poll` (deadline, dead peers,
// failure flags) runs at least that often (first after kFirstPollNs): a dead
// peer is seen within ~0.1 s.
#include <atomic>
#include <cstdint>
#include <functional>

namespace distlab::comm::shm {

inline constexpr int64_t kSpinNs = 3'000;
inline constexpr int64_t kYieldNs = 20'000'000;
inline constexpr int64_t kPollIntervalNs = 50'000'000;
inline constexpr int64_t kFirstPollNs = 1'000'000;

// The p2p engine's idle wait yields for less: it waits for new work, not for a
// peer in the middle of a step.
inline constexpr int64_t kIdleYieldNs = 1'000'000;

// futex on a word in (possibly shared) memory; not FUTEX_PRIVATE.
void futexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeoutNs);
void futexWakeAll(std::atomic<uint32_t>* word);

// Bumps `bell` and wakes sleepers (if any).
void ring(std::atomic<uint32_t>& bell, std::atomic<uint32_t>& sleepers);

// Blocks until done() is true. `poll` runs kFirstPollNs into the wait, then every
// kPollIntervalNs; it throws to end the wait (deadline passed,
// peer died). done() must be cheap; both run on the calling thread.
void waitUntil(std::atomic<uint32_t>& bell, std::atomic<uint32_t>& sleepers,
               const std::function<bool()>& done, const std::function<void()>& poll,
               int64_t yieldNs = kYieldNs);

}  // namespace distlab::comm::shm
