#pragma once
// FaultBackend: the fault-injection decorator (layer kLayerFault) for the
// world group. For each collective it logs what is issued (EventLog "op" line,
// the runner's desync analysis) and asks the FaultPlan whether a fault fires:
//   hang / crash / straggler  act on the calling thread before the operation;
//   skip_collective           returns a completed Work without issuing it;
//   extra_collective          issues a 1-element allreduce first;
//   mismatch                  issues a changed operation: shape (one more
//                             element), dtype (float32 <-> float64), op
//                             (allreduce <-> broadcast), reduce_op (SUM <->
//                             MAX), root (root + 1), tensor_count (one more
//                             tensor, as allreduce_coalesced).
// Mismatches apply to allreduce, allreduce_coalesced, broadcast and reduce;
// another op throws ValueError naming the op (the parser rejects the known
// cases of collective scripts up front).
// Other groups' backends are not wrapped (fault triggers count the world
// group's sequence numbers).
#include <memory>

#include "emulator/faults/fault_plan.hpp"
#include "runtime/comm/forwarding_backend.hpp"

namespace distlab::emulator {

class FaultBackend : public comm::ForwardingBackend {
 public:
  FaultBackend(comm::BackendPtr inner, std::shared_ptr<FaultPlan> plan, std::string groupName);

  comm::WorkPtr allreduce(const Tensor& t, const comm::AllreduceOptions& o) override;
  comm::WorkPtr allreduceCoalesced(const std::vector<Tensor>& ts,
                                   const comm::AllreduceCoalescedOptions& o) override;
  comm::WorkPtr broadcast(const Tensor& t, const comm::BroadcastOptions& o) override;
  comm::WorkPtr reduce(const Tensor& t, const comm::ReduceOptions& o) override;
  comm::WorkPtr allgather(const std::vector<Tensor>& outs, const Tensor& in,
                          const comm::AllgatherOptions& o) override;
  comm::WorkPtr allgatherIntoTensor(const Tensor& out, const Tensor& in,
                                    const comm::AllgatherOptions& o) override;
  comm::WorkPtr gather(const std::vector<Tensor>& outs, const Tensor& in,
                       const comm::GatherOptions& o) override;
  comm::WorkPtr scatter(const Tensor& out, const std::vector<Tensor>& ins,
                        const comm::ScatterOptions& o) override;
  comm::WorkPtr reduceScatter(const Tensor& out, const std::vector<Tensor>& ins,
                              const comm::ReduceScatterOptions& o) override;
  comm::WorkPtr reduceScatterTensor(const Tensor& out, const Tensor& in,
                                    const comm::ReduceScatterOptions& o) override;
  comm::WorkPtr alltoall(const std::vector<Tensor>& outs, const std::vector<Tensor>& ins,
                         const comm::AllToAllOptions& o) override;
  comm::WorkPtr alltoallBase(const Tensor& out, const Tensor& in,
                             const std::vector<int64_t>& outSplits,
                             const std::vector<int64_t>& inSplits,
                             const comm::AllToAllOptions& o) override;
  comm::WorkPtr barrier(const comm::BarrierOptions& o) override;

 private:
  // Logs the op and returns the fault to apply (after acting on hang, crash
  // and straggler, which need nothing more from the caller).
  const FaultSpec* before(comm::OpType op, uint64_t seq);
  void logOp(comm::OpType op, uint64_t seq, const std::vector<Tensor>& ins,
             const std::string& redop, int root);
  // Applies skip / extra; returns the Work for a skip, nullptr otherwise.
  comm::WorkPtr skipOrExtra(const FaultSpec& f, comm::OpType op, uint64_t seq,
                            const std::vector<Tensor>& ins, const std::vector<Tensor>& outs,
                            comm::Milliseconds timeout);
  // Logs "done <seq> ok|failed" when `work` completes.
  comm::WorkPtr track(uint64_t seq, comm::WorkPtr work);
  [[noreturn]] void unsupported(const FaultSpec& f, comm::OpType op) const;

  std::shared_ptr<FaultPlan> plan_;
  std::string groupName_;
};

// Installs FaultBackend (kLayerFault) for the default group of every init from
// now on, driven by `plan`.
void installFaultInjection(std::shared_ptr<FaultPlan> plan);

}  // namespace distlab::emulator
