#pragma once
// Overlap metrics from a Chrome trace (runtime/core/trace.hpp categories).
//
// Note [Overlap metrics]
// Per rank (the trace's pid) and per step (each "step" complete event), with
// every interval clipped to the step:
//   compute  C = union of "compute" spans (module forward, backward per module,
//                optimizer step) on any of the rank's tracks, minus the union
//                of its "wait" spans (a thread blocked on communication inside
//                a compute span -- FSDP's all-gather waits in a parent
//                module's forward or in an autograd pre-hook -- is not compute);
//   comm     M = union of "comm" spans (a collective from start to completion,
//                async 'b'/'e' pairs on the "comm <group>" tracks);
//   exposed    = |M \ C|: communication during which the rank computed nothing,
//                so it lies on the step's critical path;
//   overlap ratio = |M ∩ C| / |M| (1 when there is no communication);
//   the step's critical path is split into compute |C|, exposed comm and the
//   rest (|step| - |C| - exposed: Python-level overhead here, data, checks);
//   computeShare / exposedShare are those over |step|;
//   backward   = union of the compute spans named "backward" or "backward
//                <module>", minus the waits: the backward compute that DDP's
//                buckets can hide behind (the issue's "communication at most
//                the backward compute" condition is comm <= backward).
// Launch structure (Note [Overlap by structure]) is counted per step too:
//   launchesInBackward = DDP "launch bucket N" spans (category ddp) that begin
//                        before the step's last "backward <module>" compute
//                        span ends, i.e. with backward compute still to come;
//   waitsInBackward    = "wait" spans that begin before that end.
// A summary over steps sums the times (ratios of sums, not means of ratios),
// skipping the first `skipSteps` steps: warm-up, which for DDP is two steps
// (the second forward broadcasts the rebuilt bucket order).
//
// Note [Waiting for the last rank]
// A collective cannot progress before every rank has begun it, so a rank that
// arrives first spends [its begin, the last rank's begin) waiting for a slower
// peer: load imbalance, not communication. On the emulated cluster the ranks
// share the machine's cores, so one is often descheduled and that wait can
// dominate "exposed". In a merged trace (one pid per rank, clocks aligned
// within the bound of Note [Trace clock alignment]) the same collective has
// the same key on every rank -- its comm track's name and span name, "comm
// <group>/allreduce #<seq>" -- so each rank's span can be cut to
// [the last rank's begin, its own end]. commAfterArrival and
// exposedAfterArrival are comm and exposed measured on those cut spans; in a
// single-rank trace they equal comm and exposed.
//
// Note [Overlap by structure]
// The time-based metrics above depend on the machine: on a shared 2-core CI
// runner a descheduled rank turns any overlap into exposed waiting, so a
// bound on them fails by chance (performance is measured, not asserted in
// tests). What makes overlap possible does not depend on timing: DDP launches
// a bucket while backward compute is still to come, and the compute thread
// blocks on no communication before backward is over. Both are orderings of
// events on one thread's clock, so they are checked exactly: a regression
// that launched every bucket at the end of backward has no launches in
// backward, one that waited for each bucket has waits in it.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace distlab::emulator {

struct Interval {
  double begin = 0;  // microseconds (Chrome "ts")
  double end = 0;
};

// Union of `intervals` (sorted, disjoint, empty ones dropped).
std::vector<Interval> unite(std::vector<Interval> intervals);
// Total length of a union.
double measure(const std::vector<Interval>& united);
// A \ B for two unions (a union).
std::vector<Interval> subtract(const std::vector<Interval>& a, const std::vector<Interval>& b);
// |A ∩ B| for two unions.
double intersection(const std::vector<Interval>& a, const std::vector<Interval>& b);

struct StepOverlap {
  int rank = 0;
  std::string step;  // the step span's name ("step 3")
  double startUs = 0;
  double stepUs = 0;
  double computeUs = 0;
  double commUs = 0;
  double exposedCommUs = 0;
  double backwardUs = 0;  // backward compute: "backward" spans less waits (Note [Overlap metrics])
  // The same two from the last rank's arrival on (Note [Waiting for the last rank]).
  double commAfterArrivalUs = 0;
  double exposedAfterArrivalUs = 0;
  int launchesInBackward = 0;
  int waitsInBackward = 0;

  double overlapRatio() const { return commUs > 0 ? 1.0 - exposedCommUs / commUs : 1.0; }
  double computeShare() const { return stepUs > 0 ? computeUs / stepUs : 0; }
  double exposedShare() const { return stepUs > 0 ? exposedCommUs / stepUs : 0; }
};

struct OverlapSummary {
  int steps = 0;
  double stepUs = 0;  // totals over the steps counted
  double computeUs = 0;
  double commUs = 0;
  double exposedCommUs = 0;
  double backwardUs = 0;
  double commAfterArrivalUs = 0;
  double exposedAfterArrivalUs = 0;
  int minLaunchesInBackward = 0;  // the fewest over the steps counted
  int maxWaitsInBackward = 0;     // the most over the steps counted

  double meanStepUs() const { return steps > 0 ? stepUs / steps : 0; }
  double overlapRatio() const { return commUs > 0 ? 1.0 - exposedCommUs / commUs : 1.0; }
  double computeShare() const { return stepUs > 0 ? computeUs / stepUs : 0; }
  double exposedShare() const { return stepUs > 0 ? exposedCommUs / stepUs : 0; }
};

// Every step of every rank in `trace` ({"traceEvents": [...]} or a bare
// array), in (rank, start) order. Throws ValueError naming what is malformed
// (an event without ph/ts/pid, an 'e' without its 'b').
std::vector<StepOverlap> stepOverlaps(const nlohmann::json& trace);

inline constexpr int kWarmupSteps = 2;

// Per rank, the steps after the first `skipSteps` of that rank.
std::map<int, OverlapSummary> summarizeByRank(const std::vector<StepOverlap>& steps,
                                              int skipSteps = kWarmupSteps);

// Reads a trace file (throws Error naming the path when it cannot be read or parsed).
nlohmann::json readTraceFile(const std::string& path);

}  // namespace distlab::emulator
