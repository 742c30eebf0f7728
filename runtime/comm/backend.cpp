#include "runtime/comm/backend.hpp"

#include <fmt/format.h>

#include "runtime/core/errors.hpp"

namespace distlab::comm {

void Backend::throwUnsupported(std::string_view operation) const {
  throw DistBackendError("Backend " + name() + " does not support " + std::string(operation));
}

WorkPtr Backend::broadcast(const Tensor&, const BroadcastOptions&) { throwUnsupported("broadcast"); }
WorkPtr Backend::allreduce(const Tensor&, const AllreduceOptions&) { throwUnsupported("allreduce"); }
WorkPtr Backend::allreduceCoalesced(const std::vector<Tensor>&, const AllreduceCoalescedOptions&) {
  throwUnsupported("allreduce_coalesced");
}
WorkPtr Backend::reduce(const Tensor&, const ReduceOptions&) { throwUnsupported("reduce"); }
WorkPtr Backend::allgather(const std::vector<Tensor>&, const Tensor&, const AllgatherOptions&) {
  throwUnsupported("allgather");
}
WorkPtr Backend::allgatherIntoTensor(const Tensor&, const Tensor&, const AllgatherOptions&) {
  throwUnsupported("all_gather_into_tensor");
}
WorkPtr Backend::allgatherCoalesced(const std::vector<std::vector<Tensor>>&,
                                    const std::vector<Tensor>&, const AllgatherOptions&) {
  throwUnsupported("allgather_coalesced");
}
WorkPtr Backend::gather(const std::vector<Tensor>&, const Tensor&, const GatherOptions&) {
  throwUnsupported("gather");
}
WorkPtr Backend::scatter(const Tensor&, const std::vector<Tensor>&, const ScatterOptions&) {
  throwUnsupported("scatter");
}
WorkPtr Backend::reduceScatter(const Tensor&, const std::vector<Tensor>&,
                               const ReduceScatterOptions&) {
  throwUnsupported("reduce_scatter");
}
WorkPtr Backend::reduceScatterTensor(const Tensor&, const Tensor&, const ReduceScatterOptions&) {
  throwUnsupported("reduce_scatter_tensor");
}
WorkPtr Backend::alltoall(const std::vector<Tensor>&, const std::vector<Tensor>&,
                          const AllToAllOptions&) {
  throwUnsupported("alltoall");
}
WorkPtr Backend::alltoallBase(const Tensor&, const Tensor&, const std::vector<int64_t>&,
                              const std::vector<int64_t>&, const AllToAllOptions&) {
  throwUnsupported("all_to_all_single");
}
WorkPtr Backend::barrier(const BarrierOptions&) { throwUnsupported("barrier"); }
WorkPtr Backend::send(const Tensor&, int, const SendOptions&) { throwUnsupported("send"); }
WorkPtr Backend::recv(const Tensor&, int, const RecvOptions&) { throwUnsupported("recv"); }
WorkPtr Backend::recvAnysource(const Tensor&, const RecvOptions&) {
  throwUnsupported("recv from any source");
}

void Backend::abort(const std::string&) {}
void Backend::announceTimeout(const std::string&) {}
void Backend::abortAfterTimeout(const std::string& reason) { abort(reason); }
void Backend::shutdown(Milliseconds) {}
std::optional<FailureReason> Backend::errorReason() const { return std::nullopt; }
void Backend::prepareSplit(const std::string& /*childName*/, const std::vector<int>& /*ranks*/) {}

std::exception_ptr refusedWorkError(const std::string& what, const std::string& group,
                                    const FailureReason& why) {
  const std::string text =
      fmt::format("{}: group '{}' {}: {}", what, group, kRefusesNewWork, why.text);
  if (why.isTimeout()) {
    return std::make_exception_ptr(DistTimeoutError(text));
  }
  return std::make_exception_ptr(DistBackendError(text));
}

}  // namespace distlab::comm
