#pragma once
// The seam between the training driver (training_workload.cpp) and an engine
// (local, DDP; FSDP, ZeRO, Join later). The driver owns the loop, the data,
// the loss, the optimizer and every engine-level fault; the engine only wraps
// the module and synchronises gradients its own way.
#include <memory>
#include <vector>

#include "emulator/workloads/workload_spec.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/join/join.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::zero {
class ZeroRedundancyOptimizer;
}
namespace distlab::optim {
class Optimizer;
}

namespace distlab::emulator {

struct EngineContext {
  const TrainingWorkload* training = nullptr;  // model, engine options, hooks
  int rank = 0;
  int worldSize = 1;
  std::shared_ptr<nn::Module> module;  // built on `device`
  comm::ProcessGroupPtr group;  // null when the engine is not distributed
  Device device = Device::cpu();
};

class TrainingEngine {
 public:
  virtual ~TrainingEngine() = default;
  // Runs the (wrapped) module's forward; returns all of its outputs.
  virtual nn::TensorList forward(const Tensor& input) = 0;
  // no_sync(): false for iterations that only accumulate gradients locally.
  virtual void setGradSync(bool enabled) { (void)enabled; }
  // Called after backward, before the optimizer step (gradients final here).
  virtual void finishBackward() {}
  // The parameters the optimizer updates (the module's, in order).
  virtual std::vector<Tensor> parameters() = 0;
  // overlap_with_ddp: drive `zero` from the engine's comm hook (the DDP engine
  // registers zero::hookWithZeroStep around its allreduce hook). Called once,
  // before the first forward; the parser admits the key for "ddp" only.
  virtual void overlapZero(zero::ZeroRedundancyOptimizer& zero) { (void)zero; }
  // The engine as a Joinable for `join = true` (EngineInfo::joinable engines).
  virtual join::Joinable* joinable() { return nullptr; }
  // join = true: the run's optimizer (null under ZeRO), for a Joinable that
  // steps a joined rank's parameters itself (FSDP's). Called before the Join.
  virtual void setJoinOptimizer(optim::Optimizer* optimizer) { (void)optimizer; }
  // The full parameters for the end-of-run checksum (sharding engines gather
  // them: called on every rank after the last step).
  virtual std::vector<Tensor> checksumParameters() { return parameters(); }
  // The full parameters, with their synchronised gradients after backward, for
  // `params_match_reference` (rank 0 compares them). Sharding engines gather
  // them, so every rank calls this when the scenario checks the reference.
  virtual std::vector<Tensor> referenceParameters() { return parameters(); }
};

}  // namespace distlab::emulator
