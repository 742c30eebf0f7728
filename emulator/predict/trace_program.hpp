#pragma once
// From a traced run to the replay's programs (simulator.hpp): what each rank
// computed, when it issued each collective and what it waited for, read from
// a merged Chrome trace (`distlab run --trace`: pid = rank; Note [Trace
// categories] in runtime/core/trace.hpp), then laid out for a target world
// size.
//
// Note [Programs from a trace]
// Per rank, the sync points are: each collective's issue (the "issue <op>
// #<seq>" instant), each "wait" span of the compute thread, each collective's
// completion, and each "step" span's begin and end. Between two sync points
// the rank was busy (computing, or the framework's own work): that time
// becomes a kCompute action of the same length, so nothing the rank did is
// lost and nothing is guessed. A wait span depends on the collectives the
// rank had issued before it began, that no earlier wait claimed, and that
// completed before it ended (a wait cannot have waited for what finished
// after it: FSDP's prefetched all-gather of the next block is not what the
// current block's wait waited for; DDP's wait for its buckets claims them
// all). A collective no wait span claims is needed when it really completed
// (a blocking call; the replay's wait blocks only when the prediction is
// slower). Blocked time is not compute: it is what the replay predicts.
//
// Note [Scaling a trace]
// A trace at world W becomes programs at world N: rank r runs traced rank
// (r mod W)'s program (weak scaling: the same compute and batch per rank),
// and every collective of a group that spans the traced world spans the
// target one. Sizes follow what DDP and FSDP do as the world grows: an
// all_reduce, broadcast or reduce moves the same per-rank buffer (DDP's
// gradients); an all-gather gathers the same total (FSDP's full parameters:
// each shard shrinks as 1/N); a reduce-scatter scatters the same total
// input; an all-to-all sends the same per-rank buffer. Held fixed: compute
// (an FSDP shard's optimizer step shrinks with N in reality; it is taken as
// traced) and the order of operations. FSDP pads: each parameter is split
// by rows and every shard padded, so once N exceeds a parameter's rows its
// all-gather and reduce-scatter move more than the traced total (a 128-row
// layer at N = 256 moves 2x: 256 rows, half padding; measured in
// reports/predict.md). Where the trace carries the layout (Note [Padded
// shards in the trace]), such a collective's bytes at N are the traced
// bytes times paddedBytes(N) / paddedBytes(W); without it, the total stays. A group that does not span the traced
// world (a subgroup) and every message (a send and its receive, paired by
// their labels: Note [Messages in the replay]) are kept only when N == W,
// where a trace answers what another topology or algorithm would do;
// otherwise the trace is refused, naming the operation. (A pipeline has no
// one way to grow: more stages, or replicas of it; neither is guessed.)
#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "emulator/predict/simulator.hpp"

namespace distlab::emulator {

// The replay runs every rank's program: 65,536 ranks of a small DDP trace
// take ~35 s and ~0.5 GB here, a million would take many minutes and GBs.
inline constexpr int kMaxPredictWorld = 65536;

// An FSDP collective's parameters: rows and bytes of a row each (Note
// [Padded shards in the trace] in runtime/comm/comm_trace.hpp).
struct ShardLayout {
  std::vector<int64_t> rows, rowBytes;
  // What the collective moves at `world` ranks: world * sum(ceil(rows /
  // world) * rowBytes), padding included.
  double paddedBytes(int world) const;
};

struct TracedRun {
  int worldSize = 0;  // ranks with a program (pids 0..W-1)
  std::vector<SimCollective> collectives;        // at the traced world size
  std::map<int, ShardLayout> shardLayouts;       // by collective index, where traced
  std::vector<std::vector<SimAction>> programs;  // per traced rank
  std::vector<double> tracedStepS;  // per step index, the slowest rank's step span
};

// Reads a merged trace. Throws ValueError naming what is malformed or missing
// (no rank, no step span, a comm span without group/seq/bytes, an unknown
// operation name, ranks that disagree on a collective's size or operation, a
// message with one side missing, a receive from any source).
TracedRun readTracedRun(const nlohmann::json& trace);

// The replay's input at `worldSize` ranks on `topology` (Note [Scaling a
// trace]); `algorithm` is applied to every collective (kAuto: the model
// picks). Throws ValueError for worldSize < 1 or above kMaxPredictWorld, and for a
// group that cannot be scaled.
SimInput scaleTracedRun(const TracedRun& run, int worldSize, const Topology& topology,
                        CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto);

}  // namespace distlab::emulator
