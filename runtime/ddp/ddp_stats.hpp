#pragma once
// Timing records of the Reducer (PyTorch: Reducer::record_* / Logger timers).
//
// Note [DDP timing]
// All times are monotonic nanoseconds (runtime/core/clock.hpp). Per iteration:
//   forwardComputeStart   DDP forward entered (prepareForForward)
//   backwardComputeStart  forward finished (prepareForBackward)
//   backwardCommStart     the first bucket was launched
//   backwardComputeEnd    the autograd engine finished the last node (the queued
//                         finalize callback starts)
//   backwardCommEnd       every bucket's result was waited for and copied back
// and, as PyTorch's logger defines them:
//   forward compute   = backwardComputeStart - forwardComputeStart
//   backward compute  = backwardComputeEnd - backwardComputeStart
//   backward comm     = backwardCommEnd - backwardCommStart
//   comm/comp overlap = backwardComputeEnd - backwardCommStart
// Per bucket: ready (its last gradient arrived), launched (handed to the comm
// hook / allreduce, which waits for lower-index buckets), completed (its
// Future completed, stamped on the communication thread).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace distlab::ddp {

struct IterationTiming {
  int64_t iteration = 0;  // 1-based count of synchronising forwards
  int64_t forwardComputeStartNs = 0;
  int64_t backwardComputeStartNs = 0;
  int64_t backwardCommStartNs = 0;
  int64_t backwardComputeEndNs = 0;
  int64_t backwardCommEndNs = 0;

  bool complete() const { return backwardCommEndNs != 0; }
  int64_t forwardComputeNs() const { return backwardComputeStartNs - forwardComputeStartNs; }
  int64_t backwardComputeNs() const { return backwardComputeEndNs - backwardComputeStartNs; }
  int64_t backwardCommNs() const { return backwardCommEndNs - backwardCommStartNs; }
  int64_t overlapNs() const { return backwardComputeEndNs - backwardCommStartNs; }
};

struct BucketTiming {
  size_t index = 0;
  size_t numParams = 0;
  int64_t bytes = 0;
  bool communicated = true;  // false when skip_all_reduce_unused_params skipped it
  int64_t readyNs = 0;
  int64_t launchedNs = 0;
  int64_t completedNs = 0;
};

}  // namespace distlab::ddp
