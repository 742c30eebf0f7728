#pragma once
// The seam between the training driver (training_workload.cpp) and an engine
// (local, DDP; FSDP, ZeRO, Join later). The driver owns the loop, the data,
// the loss, the optimizer and every engine-level fault; the engine only wraps
// the module and synchronises gradients its own way.
#include <memory>
#include <vector>

#include "emulator/scenario/scenario.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/join/join.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::emulator {

struct EngineContext {
  const Scenario* scenario = nullptr;
  int rank = 0;
  int worldSize = 1;
  std::shared_ptr<nn::Module> module;
  comm::ProcessGroupPtr group;  // null when the engine is not distributed
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
  // The engine as a Joinable for `join = true` (EngineInfo::joinable engines).
  virtual join::Joinable* joinable() { return nullptr; }
};

}  // namespace distlab::emulator
