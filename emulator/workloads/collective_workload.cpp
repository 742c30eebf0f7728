// The collective-script workload: each step issues one operation (repeat
// times) and waits for it, so an error surfaces at the step that caused it.
#include <fmt/format.h>

#include <map>
#include <thread>

#include "emulator/workloads/workloads.hpp"
#include "runtime/comm/debug/monitored_barrier.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {

using comm::ProcessGroupPtr;

namespace {

Tensor filled(int64_t numel, DType dtype, int rank) {
  return full({numel}, Scalar(static_cast<int64_t>(rank + 1)), TensorOptions{}.withDType(dtype));
}

std::vector<Tensor> filledList(int n, int64_t numel, DType dtype, int rank) {
  std::vector<Tensor> out;
  for (int i = 0; i < n; ++i) out.push_back(filled(numel, dtype, rank));
  return out;
}

// Issues one operation of `step` on `pg` and waits for it.
void issue(const CollectiveStep& st, const ProcessGroupPtr& pg) {
  const int me = pg->rank();
  const int n = pg->size();
  const auto opts = TensorOptions{}.withDType(st.dtype);
  const auto red = comm::parseReduceOp(st.reduceOp);
  comm::WorkPtr w;
  const std::string& op = st.op;
  if (op == "allreduce") {
    w = pg->allreduce(filled(st.numel, st.dtype, me), {red});
  } else if (op == "allreduce_coalesced") {
    w = pg->allreduceCoalesced(filledList(st.tensors, st.numel, st.dtype, me), {red});
  } else if (op == "broadcast") {
    comm::BroadcastOptions o;
    o.rootRank = st.root;
    w = pg->broadcast(filled(st.numel, st.dtype, me), o);
  } else if (op == "reduce") {
    comm::ReduceOptions o;
    o.reduceOp = red;
    o.rootRank = st.root;
    w = pg->reduce(filled(st.numel, st.dtype, me), o);
  } else if (op == "allgather") {
    w = pg->allgather(filledList(n, st.numel, st.dtype, 0), filled(st.numel, st.dtype, me));
  } else if (op == "allgather_into_tensor") {
    w = pg->allgatherIntoTensor(empty({st.numel * n}, opts), filled(st.numel, st.dtype, me));
  } else if (op == "gather") {
    comm::GatherOptions o;
    o.rootRank = st.root;
    auto outs = me == st.root ? filledList(n, st.numel, st.dtype, 0) : std::vector<Tensor>{};
    w = pg->gather(outs, filled(st.numel, st.dtype, me), o);
  } else if (op == "scatter") {
    comm::ScatterOptions o;
    o.rootRank = st.root;
    auto ins = me == st.root ? filledList(n, st.numel, st.dtype, me) : std::vector<Tensor>{};
    w = pg->scatter(empty({st.numel}, opts), ins, o);
  } else if (op == "reduce_scatter") {
    comm::ReduceScatterOptions o;
    o.reduceOp = red;
    w = pg->reduceScatter(empty({st.numel}, opts), filledList(n, st.numel, st.dtype, me), o);
  } else if (op == "reduce_scatter_tensor") {
    comm::ReduceScatterOptions o;
    o.reduceOp = red;
    w = pg->reduceScatterTensor(empty({st.numel}, opts), filled(st.numel * n, st.dtype, me), o);
  } else if (op == "alltoall") {
    w = pg->alltoall(filledList(n, st.numel, st.dtype, 0), filledList(n, st.numel, st.dtype, me));
  } else if (op == "alltoall_single") {
    w = pg->alltoallSingle(empty({st.numel * n}, opts), filled(st.numel * n, st.dtype, me));
  } else if (op == "barrier") {
    w = pg->barrier();
  } else if (op == "monitored_barrier") {
    comm::monitoredBarrier(pg, comm::kUnsetTimeout, st.waitAllRanks);  // blocking, no Work
    return;
  } else if (op == "send") {
    pg->send(filled(st.numel, st.dtype, me), st.root);
    return;
  } else if (op == "recv") {
    pg->recv(empty({st.numel}, opts), st.root);
    return;
  } else {
    throw ValueError(fmt::format("{}: op '{}' cannot be issued", st.pos.str(), op));
  }
  w->wait();
}

}  // namespace

void runCollectiveWorkload(const std::vector<CollectiveStep>& steps, const ProcessGroupPtr& world,
                           FaultPlan& plan) {
  const int rank = world->rank();
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
  for (const auto& step : steps) {
    const auto& mine = step.forRank(rank);
    plan.log().write(fmt::format("step {}", index++));
    if (!mine.issuedBy(rank)) continue;
    for (int rep = 0; rep < mine.repeat; ++rep) {
      if (mine.op == "compute") {
        std::this_thread::sleep_for(
            std::chrono::microseconds(static_cast<int64_t>(mine.computeMs * 1000)));
      } else if (mine.op == "new_group") {
        comm::NewGroupOptions o;
        o.ranks = mine.group;
        comm::newGroup(o);
      } else {
        issue(mine, mine.group.empty() ? world : groups.at(mine.group));
      }
    }
  }
}

}  // namespace distlab::emulator
