#pragma once
// ForwardingBackend: the base of every Backend decorator (debug checks, fault
// injection, link emulation, the monitor, CUDA staging; docs/DESIGN.md
// "Decorators at seams").
//
// Every operation reaches one virtual, intercept(), as an Operation (Note
// [Operations as data] in operation.hpp); the default forwards it to the inner
// backend unchanged. A decorator overrides intercept() only, so it sees every
// operation there is, point-to-point and coalesced ones included:
//
//   class DelayBackend : public ForwardingBackend {
//    public:
//     using ForwardingBackend::ForwardingBackend;
//    protected:
//     WorkPtr intercept(const Operation& op) override {
//       std::this_thread::sleep_for(delay_);
//       return forward(op);
//     }
//   };
//
// The per-operation virtuals are final here: a decorator cannot handle one
// operation and silently pass another by. Lifecycle calls (abort, shutdown,
// ...) forward and may be overridden.
//
// Install decorators for every new group with addBackendDecorator()
// (backend_registry.hpp), or wrap one group's backend with
// ProcessGroup::setBackend. name() reports the inner backend's name, so
// capability rules and messages keep naming the real backend.
#include <memory>

#include "runtime/comm/backend.hpp"
#include "runtime/comm/operation.hpp"

namespace distlab::comm {

// A decorator's own Work standing for the inner backend's (the link
// emulator's delayed one, DETAIL's checked point-to-point one, CUDA
// staging's): the decorator completes it from the inner Work (Note [Who
// completes a Work] in work_completion.hpp). A failure from outside goes to
// the inner Work first, whose backend publishes it once it let go of the
// caller's tensors (Note [Work failure and the caller's tensors] in
// work.hpp), and reaches this one through the decorator's relay; once the
// inner Work is complete nothing touches the tensors, and this one fails at
// once. So the guarantee holds whichever Work of the chain is aborted.
class RelayedWork : public Work {
 public:
  RelayedWork(WorkInfo info, std::vector<Tensor> outputs, WorkPtr inner)
      : Work(std::move(info), std::move(outputs)), inner_(std::move(inner)) {}
  void abort(std::exception_ptr error) override;
  const WorkPtr& inner() const { return inner_; }

 private:
  WorkPtr inner_;
};

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(BackendPtr inner);

  const BackendPtr& inner() const { return inner_; }
  std::string name() const override { return inner_->name(); }

  WorkPtr broadcast(const Tensor& tensor, const BroadcastOptions& opts) final;
  WorkPtr allreduce(const Tensor& tensor, const AllreduceOptions& opts) final;
  WorkPtr allreduceCoalesced(const std::vector<Tensor>& tensors,
                             const AllreduceCoalescedOptions& opts) final;
  WorkPtr reduce(const Tensor& tensor, const ReduceOptions& opts) final;
  WorkPtr allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                    const AllgatherOptions& opts) final;
  WorkPtr allgatherIntoTensor(const Tensor& output, const Tensor& input,
                              const AllgatherOptions& opts) final;
  WorkPtr allgatherCoalesced(const std::vector<std::vector<Tensor>>& outputLists,
                             const std::vector<Tensor>& inputs,
                             const AllgatherOptions& opts) final;
  WorkPtr gather(const std::vector<Tensor>& outputs, const Tensor& input,
                 const GatherOptions& opts) final;
  WorkPtr scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                  const ScatterOptions& opts) final;
  WorkPtr reduceScatter(const Tensor& output, const std::vector<Tensor>& inputs,
                        const ReduceScatterOptions& opts) final;
  WorkPtr reduceScatterTensor(const Tensor& output, const Tensor& input,
                              const ReduceScatterOptions& opts) final;
  WorkPtr alltoall(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                   const AllToAllOptions& opts) final;
  WorkPtr alltoallBase(const Tensor& output, const Tensor& input,
                       const std::vector<int64_t>& outputSplits,
                       const std::vector<int64_t>& inputSplits,
                       const AllToAllOptions& opts) final;
  WorkPtr barrier(const BarrierOptions& opts) final;
  WorkPtr send(const Tensor& tensor, int dstRank, const SendOptions& opts) final;
  WorkPtr recv(const Tensor& tensor, int srcRank, const RecvOptions& opts) final;
  WorkPtr recvAnysource(const Tensor& tensor, const RecvOptions& opts) final;

  void abort(const std::string& reason) override;
  void announceTimeout(const std::string& reason) override;
  void abortAfterTimeout(const std::string& reason) override;
  void shutdown(Milliseconds timeout) override;
  std::optional<FailureReason> errorReason() const override;
  void prepareSplit(const std::string& childName, const std::vector<int>& ranks) override;

 protected:
  // The one interception point: every operation issued on this backend.
  // Default: forward(op).
  virtual WorkPtr intercept(const Operation& op);
  // Issues `op` (or a changed copy) on the inner backend.
  WorkPtr forward(const Operation& op) { return issueOperation(*inner_, op); }

 private:
  BackendPtr inner_;
};

}  // namespace distlab::comm
