// The collective-script workload: each step issues one operation (repeat
// times) and waits for it, so an error surfaces at the step that caused it.
#include <fmt/format.h>

#include <map>
#include <thread>

#include "emulator/workloads/workloads.hpp"
#include "runtime/comm/debug/monitored_barrier.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/comm/op_names.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::emulator {

using comm::ProcessGroupPtr;

namespace {

// The script's tensors, on the rank's device (Note [Scenarios on a GPU] in
// emulator/scenario/scenario_device.hpp): filled with rank + 1 so a reduction's
// result is predictable, or uninitialised outputs.
struct ScriptTensors {
  Device device;
  Tensor filled(int64_t numel, DType dtype, int rank) const {
    return full({numel}, Scalar(static_cast<int64_t>(rank + 1)), options(dtype));
  }
  std::vector<Tensor> filledList(int n, int64_t numel, DType dtype, int rank) const {
    std::vector<Tensor> out;
    for (int i = 0; i < n; ++i) out.push_back(filled(numel, dtype, rank));
    return out;
  }
  Tensor output(int64_t numel, DType dtype) const { return empty({numel}, options(dtype)); }
  TensorOptions options(DType dtype) const {
    return TensorOptions{}.withDType(dtype).withDevice(device);
  }
};

// The rooted collectives (broadcast, reduce, gather, scatter): `root` is a
// group rank, and only the root passes a list to gather and scatter.
comm::WorkPtr issueRooted(comm::OpType type, const CollectiveStep& st, comm::ProcessGroup& pg,
                          const ScriptTensors& buf) {
  const int me = pg.rank();
  const int n = pg.size();
  const bool root = me == st.root;
  switch (type) {
    case comm::OpType::kBroadcast:
      return pg.broadcast(buf.filled(st.numel, st.dtype, me), {.rootRank = st.root});
    case comm::OpType::kReduce:
      return pg.reduce(buf.filled(st.numel, st.dtype, me),
                       {.reduceOp = comm::parseReduceOp(st.reduceOp), .rootRank = st.root});
    case comm::OpType::kGather:
      return pg.gather(root ? buf.filledList(n, st.numel, st.dtype, 0) : std::vector<Tensor>{},
                       buf.filled(st.numel, st.dtype, me), {.rootRank = st.root});
    case comm::OpType::kScatter:
      return pg.scatter(buf.output(st.numel, st.dtype),
                        root ? buf.filledList(n, st.numel, st.dtype, me) : std::vector<Tensor>{},
                        {.rootRank = st.root});
    default:
      return nullptr;
  }
}

// The collectives every member feeds the same way (no root).
comm::WorkPtr issueUnrooted(comm::OpType type, const CollectiveStep& st, comm::ProcessGroup& pg,
                            const ScriptTensors& buf) {
  const int me = pg.rank();
  const int n = pg.size();
  const auto red = comm::parseReduceOp(st.reduceOp);
  switch (type) {
    case comm::OpType::kAllreduce:
      return pg.allreduce(buf.filled(st.numel, st.dtype, me), {red});
    case comm::OpType::kAllreduceCoalesced:
      return pg.allreduceCoalesced(buf.filledList(st.tensors, st.numel, st.dtype, me), {red});
    case comm::OpType::kAllgather:
      return pg.allgather(buf.filledList(n, st.numel, st.dtype, 0),
                          buf.filled(st.numel, st.dtype, me));
    case comm::OpType::kAllgatherBase:
      return pg.allgatherIntoTensor(buf.output(st.numel * n, st.dtype),
                                    buf.filled(st.numel, st.dtype, me));
    case comm::OpType::kReduceScatter:
      return pg.reduceScatter(buf.output(st.numel, st.dtype),
                              buf.filledList(n, st.numel, st.dtype, me), {.reduceOp = red});
    case comm::OpType::kReduceScatterBase:
      return pg.reduceScatterTensor(buf.output(st.numel, st.dtype),
                                    buf.filled(st.numel * n, st.dtype, me), {.reduceOp = red});
    case comm::OpType::kAlltoall:
      return pg.alltoall(buf.filledList(n, st.numel, st.dtype, 0),
                         buf.filledList(n, st.numel, st.dtype, me));
    case comm::OpType::kAlltoallBase:
      return pg.alltoallSingle(buf.output(st.numel * n, st.dtype),
                               buf.filled(st.numel * n, st.dtype, me));
    case comm::OpType::kBarrier:
      return pg.barrier();
    default:
      return nullptr;
  }
}

bool isRooted(comm::OpType type) {
  return type == comm::OpType::kBroadcast || type == comm::OpType::kReduce ||
         type == comm::OpType::kGather || type == comm::OpType::kScatter;
}

// Issues one operation of `step` on `pg` and waits for it, or with `async`
// keeps its Work in `pending`. `st.op` is a kCollectiveOps name (the parser
// checked it): torch.distributed's API name of an OpType, or monitored_barrier.
void issue(const CollectiveStep& st, const ProcessGroupPtr& pg,
           std::vector<comm::WorkPtr>& pending, const ScriptTensors& buf) {
  if (st.op == "monitored_barrier") {
    comm::monitoredBarrier(pg, comm::kUnsetTimeout, st.waitAllRanks);  // blocking, no Work
    return;
  }
  const auto type = comm::parseApiName(st.op);
  if (type == comm::OpType::kSend) {
    pg->send(buf.filled(st.numel, st.dtype, pg->rank()), st.root);  // blocking
    return;
  }
  if (type == comm::OpType::kRecv) {
    pg->recv(buf.output(st.numel, st.dtype), st.root);  // blocking
    return;
  }
  comm::WorkPtr w;
  if (type) {
    w = isRooted(*type) ? issueRooted(*type, st, *pg, buf) : issueUnrooted(*type, st, *pg, buf);
  }
  if (!w) throw ValueError(fmt::format("{}: op '{}' cannot be issued", st.pos.str(), st.op));
  if (st.async) {
    pending.push_back(w);
    return;
  }
  w->wait();
}

// op = "wait" (and the end of an iteration): every async collective so far.
void waitForPending(std::vector<comm::WorkPtr>& pending) {
  if (pending.empty()) return;
  trace::Span wait(trace::Category::kWait, "wait for async collectives");
  for (auto& w : pending) w->wait();
  pending.clear();
}

void runStep(const CollectiveStep& mine, const ProcessGroupPtr& pg,
             std::vector<comm::WorkPtr>& pending, const ScriptTensors& buf) {
  if (mine.op == "compute") {
    trace::Span span(trace::Category::kCompute, "compute");
    std::this_thread::sleep_for(
        std::chrono::microseconds(static_cast<int64_t>(mine.computeMs * 1000)));
  } else if (mine.op == "wait") {
    waitForPending(pending);
  } else if (mine.op == "new_group") {
    comm::NewGroupOptions o;
    o.ranks = mine.group;
    comm::newGroup(o);
  } else {
    issue(mine, pg, pending, buf);
  }
}

}  // namespace

void runCollectiveWorkload(const std::vector<CollectiveStep>& steps, const ProcessGroupPtr& world,
                           FaultPlan& plan, int iterations, Device device) {
  const int rank = world->rank();
  const ScriptTensors buf{device};
  // Subgroups used by steps are created up front, in script order, by every
  // rank (group creation is collective over the world, Note [Issue order]).
  std::map<std::vector<int>, ProcessGroupPtr> groups;
  for (const auto& step : steps) {
    const auto& mine = step.forRank(rank);
    if (mine.op == "new_group" || mine.group.empty() || groups.count(mine.group)) continue;
    comm::NewGroupOptions o;
    o.ranks = mine.group;
    groups[mine.group] = comm::newGroup(o);
  }
  int index = 0;
  std::vector<comm::WorkPtr> pending;
  for (int iteration = 0; iteration < iterations; ++iteration) {
    trace::Span stepSpan(trace::Category::kStep, "step ", std::to_string(iteration));
    for (const auto& step : steps) {
      const auto& mine = step.forRank(rank);
      plan.log().write(fmt::format("step {}", index++));
      if (!mine.issuedBy(rank)) continue;
      // new_group's `group` is the group it creates, not one it runs on.
      const bool onWorld = mine.group.empty() || mine.op == "new_group";
      const ProcessGroupPtr& pg = onWorld ? world : groups.at(mine.group);
      for (int rep = 0; rep < mine.repeat; ++rep) runStep(mine, pg, pending, buf);
    }
    waitForPending(pending);
  }
}

}  // namespace distlab::emulator
