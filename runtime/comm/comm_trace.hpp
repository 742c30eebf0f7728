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
#include <memory>
#include <string>

#include "runtime/comm/work.hpp"

namespace distlab::comm {

// The operation's name in traces: opTypeName in lower case ("allreduce").
std::string traceOpName(OpType op);

// The trace observer for `work`, or null when tracing is off.
std::shared_ptr<WorkObserver> traceObserver(const Work& work);

}  // namespace distlab::comm
