#include "runtime/comm/forwarding_backend.hpp"

#include "runtime/core/check.hpp"

namespace distlab::comm {

ForwardingBackend::ForwardingBackend(BackendPtr inner)
    : Backend(inner ? inner->rank() : 0, inner ? inner->size() : 1), inner_(std::move(inner)) {
  DL_CHECK_T(ValueError, inner_ != nullptr, "ForwardingBackend: the inner backend is null");
}

WorkPtr ForwardingBackend::broadcast(const Tensor& t, const BroadcastOptions& o) {
  return inner_->broadcast(t, o);
}
WorkPtr ForwardingBackend::allreduce(const Tensor& t, const AllreduceOptions& o) {
  return inner_->allreduce(t, o);
}
WorkPtr ForwardingBackend::allreduceCoalesced(const std::vector<Tensor>& t,
                                              const AllreduceCoalescedOptions& o) {
  return inner_->allreduceCoalesced(t, o);
}
WorkPtr ForwardingBackend::reduce(const Tensor& t, const ReduceOptions& o) {
  return inner_->reduce(t, o);
}
WorkPtr ForwardingBackend::allgather(const std::vector<Tensor>& out, const Tensor& in,
                                     const AllgatherOptions& o) {
  return inner_->allgather(out, in, o);
}
WorkPtr ForwardingBackend::allgatherIntoTensor(const Tensor& out, const Tensor& in,
                                               const AllgatherOptions& o) {
  return inner_->allgatherIntoTensor(out, in, o);
}
WorkPtr ForwardingBackend::allgatherCoalesced(const std::vector<std::vector<Tensor>>& out,
                                              const std::vector<Tensor>& in,
                                              const AllgatherOptions& o) {
  return inner_->allgatherCoalesced(out, in, o);
}
WorkPtr ForwardingBackend::gather(const std::vector<Tensor>& out, const Tensor& in,
                                  const GatherOptions& o) {
  return inner_->gather(out, in, o);
}
WorkPtr ForwardingBackend::scatter(const Tensor& out, const std::vector<Tensor>& in,
                                   const ScatterOptions& o) {
  return inner_->scatter(out, in, o);
}
WorkPtr ForwardingBackend::reduceScatter(const Tensor& out, const std::vector<Tensor>& in,
                                         const ReduceScatterOptions& o) {
  return inner_->reduceScatter(out, in, o);
}
WorkPtr ForwardingBackend::reduceScatterTensor(const Tensor& out, const Tensor& in,
                                               const ReduceScatterOptions& o) {
  return inner_->reduceScatterTensor(out, in, o);
}
WorkPtr ForwardingBackend::alltoall(const std::vector<Tensor>& out, const std::vector<Tensor>& in,
                                    const AllToAllOptions& o) {
  return inner_->alltoall(out, in, o);
}
WorkPtr ForwardingBackend::alltoallBase(const Tensor& out, const Tensor& in,
                                        const std::vector<int64_t>& outSplits,
                                        const std::vector<int64_t>& inSplits,
                                        const AllToAllOptions& o) {
  return inner_->alltoallBase(out, in, outSplits, inSplits, o);
}
WorkPtr ForwardingBackend::barrier(const BarrierOptions& o) { return inner_->barrier(o); }
WorkPtr ForwardingBackend::send(const Tensor& t, int dst, const SendOptions& o) {
  return inner_->send(t, dst, o);
}
WorkPtr ForwardingBackend::recv(const Tensor& t, int src, const RecvOptions& o) {
  return inner_->recv(t, src, o);
}
WorkPtr ForwardingBackend::recvAnysource(const Tensor& t, const RecvOptions& o) {
  return inner_->recvAnysource(t, o);
}
void ForwardingBackend::abort(const std::string& reason) { inner_->abort(reason); }
void ForwardingBackend::announceTimeout(const std::string& reason) {
  inner_->announceTimeout(reason);
}
void ForwardingBackend::abortAfterTimeout(const std::string& reason) {
  inner_->abortAfterTimeout(reason);
}
void ForwardingBackend::shutdown(Milliseconds timeout) { inner_->shutdown(timeout); }
std::optional<std::string> ForwardingBackend::errorReason() const { return inner_->errorReason(); }
void ForwardingBackend::prepareSplit(const std::string& childName, const std::vector<int>& ranks) {
  inner_->prepareSplit(childName, ranks);
}

}  // namespace distlab::comm
