#include "runtime/comm/operation.hpp"

#include <fmt/format.h>

#include "runtime/comm/backend.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {
namespace {

int64_t bytesOf(std::span<const Tensor> tensors) {
  int64_t total = 0;
  for (const Tensor& t : tensors) total += static_cast<int64_t>(t.nbytes());
  return total;
}

// Copies the fields every options struct has.
template <typename Options>
Options common(const Operation& op) {
  Options o;
  o.timeout = op.timeout;
  o.asyncOp = op.asyncOp;
  o.seq = op.seq;
  return o;
}

template <typename Options>
Options withReduceOp(const Operation& op) {
  Options o = common<Options>(op);
  o.reduceOp = op.reduceOp;
  return o;
}

template <typename Options>
Options withRoot(const Operation& op) {
  Options o = common<Options>(op);
  o.rootRank = op.root;
  return o;
}

template <typename Options>
Options pointToPoint(const Operation& op) {
  Options o;
  o.tag = op.tag;
  o.timeout = op.timeout;
  o.seq = op.seq;
  return o;
}

std::vector<Tensor> list(std::span<const Tensor> tensors) {
  return {tensors.begin(), tensors.end()};
}

std::vector<int64_t> list(std::span<const int64_t> splits) {
  return {splits.begin(), splits.end()};
}

}  // namespace

bool hasReduceOp(OpType type) {
  switch (type) {
    case OpType::kAllreduce:
    case OpType::kAllreduceCoalesced:
    case OpType::kReduce:
    case OpType::kReduceScatter:
    case OpType::kReduceScatterBase:
      return true;
    default:
      return false;
  }
}

bool hasRoot(OpType type) {
  return type == OpType::kBroadcast || type == OpType::kReduce || type == OpType::kGather ||
         type == OpType::kScatter;
}

bool isInPlace(OpType type) {
  return type == OpType::kBroadcast || type == OpType::kAllreduce ||
         type == OpType::kAllreduceCoalesced || type == OpType::kReduce;
}

int64_t inputBytes(const Operation& op) { return bytesOf(op.inputs); }

int64_t outputBytes(const Operation& op) {
  int64_t total = bytesOf(op.outputs);
  for (const auto& l : op.outputLists) total += bytesOf(l);
  return total;
}

std::vector<Tensor> writtenTensors(const Operation& op) {
  std::vector<Tensor> out(op.outputs.begin(), op.outputs.end());
  for (const auto& l : op.outputLists) out.insert(out.end(), l.begin(), l.end());
  return out;
}

// One case per OpType and no default, so -Wswitch names an OpType left out.
WorkPtr issueOperation(Backend& b, const Operation& op) {
  const auto one = [&op](std::span<const Tensor> ts) -> const Tensor& {
    if (ts.empty()) {
      throw ValueError(fmt::format("issueOperation: {} needs a tensor and has none",
                                   opTypeName(op.type)));
    }
    return ts.front();
  };
  switch (op.type) {
    case OpType::kBroadcast:
      return b.broadcast(one(op.inputs), withRoot<BroadcastOptions>(op));
    case OpType::kAllreduce:
      return b.allreduce(one(op.inputs), withReduceOp<AllreduceOptions>(op));
    case OpType::kAllreduceCoalesced:
      return b.allreduceCoalesced(list(op.inputs), withReduceOp<AllreduceCoalescedOptions>(op));
    case OpType::kReduce: {
      auto o = withReduceOp<ReduceOptions>(op);
      o.rootRank = op.root;
      return b.reduce(one(op.inputs), o);
    }
    case OpType::kAllgather:
      return b.allgather(list(op.outputs), one(op.inputs), common<AllgatherOptions>(op));
    case OpType::kAllgatherBase:
      return b.allgatherIntoTensor(one(op.outputs), one(op.inputs), common<AllgatherOptions>(op));
    case OpType::kAllgatherCoalesced:
      return b.allgatherCoalesced({op.outputLists.begin(), op.outputLists.end()}, list(op.inputs),
                                  common<AllgatherOptions>(op));
    case OpType::kGather:
      return b.gather(list(op.outputs), one(op.inputs), withRoot<GatherOptions>(op));
    case OpType::kScatter:
      return b.scatter(one(op.outputs), list(op.inputs), withRoot<ScatterOptions>(op));
    case OpType::kReduceScatter:
      return b.reduceScatter(one(op.outputs), list(op.inputs),
                             withReduceOp<ReduceScatterOptions>(op));
    case OpType::kReduceScatterBase:
      return b.reduceScatterTensor(one(op.outputs), one(op.inputs),
                                   withReduceOp<ReduceScatterOptions>(op));
    case OpType::kAlltoall:
      return b.alltoall(list(op.outputs), list(op.inputs), common<AllToAllOptions>(op));
    case OpType::kAlltoallBase:
      return b.alltoallBase(one(op.outputs), one(op.inputs), list(op.outputSplits),
                            list(op.inputSplits), common<AllToAllOptions>(op));
    case OpType::kBarrier:
      return b.barrier(common<BarrierOptions>(op));
    case OpType::kSend:
      return b.send(one(op.inputs), op.peer, pointToPoint<SendOptions>(op));
    case OpType::kRecv:
      return b.recv(one(op.outputs), op.peer, pointToPoint<RecvOptions>(op));
    case OpType::kRecvAnysource:
      return b.recvAnysource(one(op.outputs), pointToPoint<RecvOptions>(op));
    case OpType::kUnknown:
      break;
  }
  throw ValueError(fmt::format("issueOperation: operation type {} is not an operation",
                               opTypeName(op.type)));
}

}  // namespace distlab::comm
