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
// Point-to-point operations (send, recv, recv from any source) are logged on
// their own "p2p" lines, numbered per peer as the backend numbers them. Faults
// given `on = "send"|"recv"` fire on them (Note [Point-to-point triggers] in
// fault_plan.hpp): hang, crash and straggler as above; skip_collective
// returns a completed Work without moving the message; extra_collective
// issues the 1-element allreduce first; mismatch shape | dtype sends (or
// receives into) a tensor one element longer or of the other float dtype.
// Other groups' backends are not wrapped (fault triggers count the world
// group's sequence numbers).
#include <memory>

#include "emulator/faults/fault_plan.hpp"
#include "runtime/comm/forwarding_backend.hpp"

namespace distlab::emulator {

class FaultBackend : public comm::ForwardingBackend {
 public:
  FaultBackend(comm::BackendPtr inner, std::shared_ptr<FaultPlan> plan, std::string groupName);

 protected:
  comm::WorkPtr intercept(const comm::Operation& op) override;

 private:
  // Logs the op and returns the fault to apply (after acting on hang, crash
  // and straggler, which need nothing more from the caller).
  const FaultSpec* before(const comm::Operation& op);
  // Logs "op <seq> <TYPE> <numel> <dtype> <reduce op|-> <root|-1> <tensors>".
  void logOp(const comm::Operation& op);
  // Applies skip / extra; returns the Work for a skip, nullptr otherwise.
  comm::WorkPtr skipOrExtra(const FaultSpec& f, const comm::Operation& op);
  // Issues the operation `f` changes `op` into (see the list above).
  comm::WorkPtr mismatched(const FaultSpec& f, const comm::Operation& op);
  // Applies the point-to-point fault that fires, if any; logs
  // "p2p <TYPE> <peer|any> <k> <numel> <dtype> <tag>" (what is issued) and,
  // when the Work completes, "p2p_done <TYPE> <peer|any> <k> ok|failed".
  comm::WorkPtr pointToPoint(const comm::Operation& op);
  // A skipped send or recv: "p2p_skipped <TYPE> <peer|any> <k>", completed.
  comm::WorkPtr skippedPointToPoint(const comm::Operation& op, const std::string& what);
  // The extra_collective fault: a 1-element allreduce issued before `op`.
  void issueExtraAllreduce(const comm::Operation& op);
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
