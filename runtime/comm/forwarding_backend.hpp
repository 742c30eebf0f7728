#pragma once
// ForwardingBackend: the base of every Backend decorator (debug checks, fault
// injection, link emulation, recording; DESIGN.md "Decorators at seams").
// Every virtual forwards to the inner backend unchanged; a decorator overrides
// only what it changes, e.g.
//
//   class DelayBackend : public ForwardingBackend {
//    public:
//     using ForwardingBackend::ForwardingBackend;
//     WorkPtr allreduce(const Tensor& t, const AllreduceOptions& o) override {
//       std::this_thread::sleep_for(delay_);
//       return ForwardingBackend::allreduce(t, o);
//     }
//   };
//
// Install decorators for every new group with addBackendDecorator()
// (backend_registry.hpp), or wrap one group's backend with
// ProcessGroup::setBackend. name() reports the inner backend's name, so
// capability rules and messages keep naming the real backend.
#include <memory>

#include "runtime/comm/backend.hpp"

namespace distlab::comm {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(BackendPtr inner);

  const BackendPtr& inner() const { return inner_; }
  std::string name() const override { return inner_->name(); }

  WorkPtr broadcast(const Tensor& tensor, const BroadcastOptions& opts) override;
  WorkPtr allreduce(const Tensor& tensor, const AllreduceOptions& opts) override;
  WorkPtr allreduceCoalesced(const std::vector<Tensor>& tensors,
                             const AllreduceCoalescedOptions& opts) override;
  WorkPtr reduce(const Tensor& tensor, const ReduceOptions& opts) override;
  WorkPtr allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                    const AllgatherOptions& opts) override;
  WorkPtr allgatherIntoTensor(const Tensor& output, const Tensor& input,
                              const AllgatherOptions& opts) override;
  WorkPtr allgatherCoalesced(const std::vector<std::vector<Tensor>>& outputLists,
                             const std::vector<Tensor>& inputs,
                             const AllgatherOptions& opts) override;
  WorkPtr gather(const std::vector<Tensor>& outputs, const Tensor& input,
                 const GatherOptions& opts) override;
  WorkPtr scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                  const ScatterOptions& opts) override;
  WorkPtr reduceScatter(const Tensor& output, const std::vector<Tensor>& inputs,
                        const ReduceScatterOptions& opts) override;
  WorkPtr reduceScatterTensor(const Tensor& output, const Tensor& input,
                              const ReduceScatterOptions& opts) override;
  WorkPtr alltoall(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                   const AllToAllOptions& opts) override;
  WorkPtr alltoallBase(const Tensor& output, const Tensor& input,
                       const std::vector<int64_t>& outputSplits,
                       const std::vector<int64_t>& inputSplits,
                       const AllToAllOptions& opts) override;
  WorkPtr barrier(const BarrierOptions& opts) override;
  WorkPtr send(const Tensor& tensor, int dstRank, const SendOptions& opts) override;
  WorkPtr recv(const Tensor& tensor, int srcRank, const RecvOptions& opts) override;
  WorkPtr recvAnysource(const Tensor& tensor, const RecvOptions& opts) override;

  void abort(const std::string& reason) override;
  void announceTimeout(const std::string& reason) override;
  void abortAfterTimeout(const std::string& reason) override;
  void shutdown(Milliseconds timeout) override;
  std::optional<std::string> errorReason() const override;
  void prepareSplit(const std::string& childName, const std::vector<int>& ranks) override;

 private:
  BackendPtr inner_;
};

}  // namespace distlab::comm
