#pragma once
// Collectives in the trace (runtime/core/trace.hpp). ProcessGroup attaches
// this observer to every Work it issues while tracing is on; it records
//   - "issue <op> #<seq>"  an instant on the issuing thread's track,
//   - "start/end <op> #<seq>" instants on the threads that made those
//     transitions (a progress thread; the link emulator's timer thread),
//   - "<op> #<seq>" an async span from start to completion on the group's
//     virtual track "comm <group>" (category kComm, Note [Trace tracks]),
//     with the group, seq, bytes and whether it succeeded as args.
// A send or receive's <op> names its pair, sender first, in group ranks:
// "send 0->2 #3" on rank 0 and "recv 0->2 #3" on rank 2 are one message (the
// third from 0 to 2), so a reader can pair them.
// Timestamps are the Work's own (Work::scheduledNs/startedNs/completedNs),
// so an observer added after a fast operation finished still places it right.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/work.hpp"

namespace distlab::comm {

// The operation's name in traces: opTypeName in lower case ("allreduce").
std::string traceOpName(OpType op);

// The trace observer for `work`, or null when tracing is off.
std::shared_ptr<WorkObserver> traceObserver(const Work& work);

// Note [Padded shards in the trace]
// An FSDP all-gather's (and reduce-scatter's) size does not follow 1/N of a
// fixed total as the world N grows: each parameter is split by rows, every
// shard padded to ceil(rows / N) rows (Note [Chunked sharding]), so a
// 128-row layer over 256 ranks moves 256 rows. While a ShardLayoutScope lives
// on a thread, the operations that thread issues carry the layout as span
// args, "shard_rows" and "row_bytes" (one entry per parameter, in buffer
// order), from which a trace reader sizes them at any world
// (emulator/predict: N * sum(ceil(rows / N) * row_bytes)).
class ShardLayoutScope {
 public:
  ShardLayoutScope() = default;  // carries nothing (tracing off)
  ShardLayoutScope(const std::vector<int64_t>& rows, const std::vector<int64_t>& rowBytes);
  ~ShardLayoutScope();
  ShardLayoutScope(const ShardLayoutScope&) = delete;
  ShardLayoutScope& operator=(const ShardLayoutScope&) = delete;

 private:
  std::string args_;  // ,"shard_rows":[...],"row_bytes":[...]
  const std::string* previous_ = nullptr;
  bool active_ = false;
};

}  // namespace distlab::comm
