#pragma once
// monitoredBarrier (torch.distributed.monitored_barrier; docs/pytorch-semantics.md,
// "Monitored barrier"): a host-side barrier that reports the ranks that did not arrive. It
// runs through the group's store, so it works on every backend (PyTorch: Gloo
// only).
//
// Protocol (star, as PyTorch): ranks != 0 publish their arrival and wait for
// rank 0's answer; rank 0 waits for ranks 1..n-1 in ascending order with the
// remaining time and answers. Failures:
//   rank 0:  "[Rank 0]: Rank 1 failed to pass monitoredBarrier in 2000 ms"
//            ("[Rank 0]: Ranks 1, 2 failed ..." with waitAllRanks), then one
//            line per missing rank saying whether it is dead or alive but not
//            arriving (liveness.hpp);
//   others:  "Rank 2 successfully reached monitoredBarrier, but received errors
//            while waiting for send/recv from rank 0. Please check rank 0 logs
//            for faulty rank." followed by "Rank 0 reported: <rank 0's text>",
//            so every rank names the same culprit (no circular blame,
//            PyTorch #83289), or by rank 0's own liveness when rank 0 is gone.
// Ranks are group ranks of `group`, named as in Note [Naming ranks]: in a
// subgroup "[Rank 0 of group 'g1' (global rank 1)]: Rank 1 of group 'g1'
// (global rank 3) failed to pass monitoredBarrier in 2000 ms".
// Rank 0 fails fast when a missing rank is dead; with waitAllRanks it keeps
// waiting for the live ones until the timeout. The others wait for rank 0's
// answer up to timeout + kMonitoredBarrierGrace.
// Throws DistPeerFailureError when a culprit is dead, DistTimeoutError
// otherwise. Blocking; thread-safe per group as long as every rank calls the
// barriers of one group in the same order.
#include <chrono>

#include "runtime/comm/process_group.hpp"

namespace distlab::comm {

inline constexpr std::chrono::milliseconds kMonitoredBarrierGrace{5000};

// group == nullptr: the default group. timeout kUnsetTimeout: the group's.
void monitoredBarrier(const ProcessGroupPtr& group = nullptr,
                      Milliseconds timeout = kUnsetTimeout, bool waitAllRanks = false);

}  // namespace distlab::comm
