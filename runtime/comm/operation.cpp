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

// The operation's options struct: every field that struct has, from `op`
// (the inverse of ForwardingBackend's description).
template <typename Options>
Options optionsOf(const Operation& op) {
  Options o;
  o.timeout = op.timeout;
  o.seq = op.seq;
  if constexpr (requires { o.asyncOp; }) o.asyncOp = op.asyncOp;
  if constexpr (requires { o.reduceOp; }) o.reduceOp = op.reduceOp;
  if constexpr (requires { o.rootRank; }) o.rootRank = op.root;
  if constexpr (requires { o.tag; }) o.tag = op.tag;
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
      return b.broadcast(one(op.inputs), optionsOf<BroadcastOptions>(op));
    case OpType::kAllreduce:
      return b.allreduce(one(op.inputs), optionsOf<AllreduceOptions>(op));
    case OpType::kAllreduceCoalesced:
      return b.allreduceCoalesced(list(op.inputs), optionsOf<AllreduceCoalescedOptions>(op));
    case OpType::kReduce:
      return b.reduce(one(op.inputs), optionsOf<ReduceOptions>(op));
    case OpType::kAllgather:
      return b.allgather(list(op.outputs), one(op.inputs), optionsOf<AllgatherOptions>(op));
    case OpType::kAllgatherBase:
      return b.allgatherIntoTensor(one(op.outputs), one(op.inputs),
                                   optionsOf<AllgatherOptions>(op));
    case OpType::kAllgatherCoalesced:
      return b.allgatherCoalesced({op.outputLists.begin(), op.outputLists.end()}, list(op.inputs),
                                  optionsOf<AllgatherOptions>(op));
    case OpType::kGather:
      return b.gather(list(op.outputs), one(op.inputs), optionsOf<GatherOptions>(op));
    case OpType::kScatter:
      return b.scatter(one(op.outputs), list(op.inputs), optionsOf<ScatterOptions>(op));
    case OpType::kReduceScatter:
      return b.reduceScatter(one(op.outputs), list(op.inputs),
                             optionsOf<ReduceScatterOptions>(op));
    case OpType::kReduceScatterBase:
      return b.reduceScatterTensor(one(op.outputs), one(op.inputs),
                                   optionsOf<ReduceScatterOptions>(op));
    case OpType::kAlltoall:
      return b.alltoall(list(op.outputs), list(op.inputs), optionsOf<AllToAllOptions>(op));
    case OpType::kAlltoallBase:
      return b.alltoallBase(one(op.outputs), one(op.inputs), list(op.outputSplits),
                            list(op.inputSplits), optionsOf<AllToAllOptions>(op));
    case OpType::kBarrier:
      return b.barrier(optionsOf<BarrierOptions>(op));
    case OpType::kSend:
      return b.send(one(op.inputs), op.peer, optionsOf<SendOptions>(op));
    case OpType::kRecv:
      return b.recv(one(op.outputs), op.peer, optionsOf<RecvOptions>(op));
    case OpType::kRecvAnysource:
      return b.recvAnysource(one(op.outputs), optionsOf<RecvOptions>(op));
    case OpType::kUnknown:
      break;
  }
  throw ValueError(fmt::format("issueOperation: operation type {} is not an operation",
                               opTypeName(op.type)));
}

}  // namespace distlab::comm
