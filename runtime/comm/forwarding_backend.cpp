#include "runtime/comm/forwarding_backend.hpp"

#include "runtime/core/check.hpp"

namespace distlab::comm {

void RelayedWork::abort(std::exception_ptr error) {
  inner_->abort(error);
  // Complete (and so done with the tensors) before or during the abort: the
  // relay may not run for a while (the link's modelled delay), fail now.
  if (inner_->isCompleted()) Work::abort(std::move(error));
}

namespace {

// A single tensor as a span (no copy).
std::span<const Tensor> one(const Tensor& t) { return {&t, 1}; }

template <typename Options>
Operation described(OpType type, const Options& o) {
  Operation op;
  op.type = type;
  op.timeout = o.timeout;
  op.seq = o.seq;
  if constexpr (requires { o.asyncOp; }) op.asyncOp = o.asyncOp;
  if constexpr (requires { o.reduceOp; }) op.reduceOp = o.reduceOp;
  if constexpr (requires { o.rootRank; }) op.root = o.rootRank;
  if constexpr (requires { o.tag; }) op.tag = o.tag;
  return op;
}

}  // namespace

ForwardingBackend::ForwardingBackend(BackendPtr inner)
    : Backend(inner ? inner->rank() : 0, inner ? inner->size() : 1), inner_(std::move(inner)) {
  DL_CHECK_T(ValueError, inner_ != nullptr, "ForwardingBackend: the inner backend is null");
}

WorkPtr ForwardingBackend::intercept(const Operation& op) { return forward(op); }

WorkPtr ForwardingBackend::broadcast(const Tensor& t, const BroadcastOptions& o) {
  Operation op = described(OpType::kBroadcast, o);
  op.inputs = op.outputs = one(t);
  return intercept(op);
}
WorkPtr ForwardingBackend::allreduce(const Tensor& t, const AllreduceOptions& o) {
  Operation op = described(OpType::kAllreduce, o);
  op.inputs = op.outputs = one(t);
  return intercept(op);
}
WorkPtr ForwardingBackend::allreduceCoalesced(const std::vector<Tensor>& ts,
                                              const AllreduceCoalescedOptions& o) {
  Operation op = described(OpType::kAllreduceCoalesced, o);
  op.inputs = op.outputs = ts;
  return intercept(op);
}
WorkPtr ForwardingBackend::reduce(const Tensor& t, const ReduceOptions& o) {
  Operation op = described(OpType::kReduce, o);
  op.inputs = op.outputs = one(t);
  return intercept(op);
}
WorkPtr ForwardingBackend::allgather(const std::vector<Tensor>& outs, const Tensor& in,
                                     const AllgatherOptions& o) {
  Operation op = described(OpType::kAllgather, o);
  op.inputs = one(in);
  op.outputs = outs;
  return intercept(op);
}
WorkPtr ForwardingBackend::allgatherIntoTensor(const Tensor& out, const Tensor& in,
                                               const AllgatherOptions& o) {
  Operation op = described(OpType::kAllgatherBase, o);
  op.inputs = one(in);
  op.outputs = one(out);
  return intercept(op);
}
WorkPtr ForwardingBackend::allgatherCoalesced(const std::vector<std::vector<Tensor>>& outs,
                                              const std::vector<Tensor>& ins,
                                              const AllgatherOptions& o) {
  Operation op = described(OpType::kAllgatherCoalesced, o);
  op.inputs = ins;
  op.outputLists = outs;
  return intercept(op);
}
WorkPtr ForwardingBackend::gather(const std::vector<Tensor>& outs, const Tensor& in,
                                  const GatherOptions& o) {
  Operation op = described(OpType::kGather, o);
  op.inputs = one(in);
  op.outputs = outs;
  return intercept(op);
}
WorkPtr ForwardingBackend::scatter(const Tensor& out, const std::vector<Tensor>& ins,
                                   const ScatterOptions& o) {
  Operation op = described(OpType::kScatter, o);
  op.inputs = ins;
  op.outputs = one(out);
  return intercept(op);
}
WorkPtr ForwardingBackend::reduceScatter(const Tensor& out, const std::vector<Tensor>& ins,
                                         const ReduceScatterOptions& o) {
  Operation op = described(OpType::kReduceScatter, o);
  op.inputs = ins;
  op.outputs = one(out);
  return intercept(op);
}
WorkPtr ForwardingBackend::reduceScatterTensor(const Tensor& out, const Tensor& in,
                                               const ReduceScatterOptions& o) {
  Operation op = described(OpType::kReduceScatterBase, o);
  op.inputs = one(in);
  op.outputs = one(out);
  return intercept(op);
}
WorkPtr ForwardingBackend::alltoall(const std::vector<Tensor>& outs, const std::vector<Tensor>& ins,
                                    const AllToAllOptions& o) {
  Operation op = described(OpType::kAlltoall, o);
  op.inputs = ins;
  op.outputs = outs;
  return intercept(op);
}
WorkPtr ForwardingBackend::alltoallBase(const Tensor& out, const Tensor& in,
                                        const std::vector<int64_t>& outSplits,
                                        const std::vector<int64_t>& inSplits,
                                        const AllToAllOptions& o) {
  Operation op = described(OpType::kAlltoallBase, o);
  op.inputs = one(in);
  op.outputs = one(out);
  op.inputSplits = inSplits;
  op.outputSplits = outSplits;
  return intercept(op);
}
WorkPtr ForwardingBackend::barrier(const BarrierOptions& o) {
  return intercept(described(OpType::kBarrier, o));
}
WorkPtr ForwardingBackend::send(const Tensor& t, int dst, const SendOptions& o) {
  Operation op = described(OpType::kSend, o);
  op.inputs = one(t);
  op.peer = dst;
  return intercept(op);
}
WorkPtr ForwardingBackend::recv(const Tensor& t, int src, const RecvOptions& o) {
  Operation op = described(OpType::kRecv, o);
  op.outputs = one(t);
  op.peer = src;
  return intercept(op);
}
WorkPtr ForwardingBackend::recvAnysource(const Tensor& t, const RecvOptions& o) {
  Operation op = described(OpType::kRecvAnysource, o);
  op.outputs = one(t);
  return intercept(op);
}

void ForwardingBackend::abort(const std::string& reason) { inner_->abort(reason); }
void ForwardingBackend::announceTimeout(const std::string& reason) {
  inner_->announceTimeout(reason);
}
void ForwardingBackend::abortAfterTimeout(const std::string& reason) {
  inner_->abortAfterTimeout(reason);
}
void ForwardingBackend::shutdown(Milliseconds timeout) { inner_->shutdown(timeout); }
std::optional<FailureReason> ForwardingBackend::errorReason() const {
  return inner_->errorReason();
}
void ForwardingBackend::prepareSplit(const std::string& childName, const std::vector<int>& ranks) {
  inner_->prepareSplit(childName, ranks);
}

}  // namespace distlab::comm
