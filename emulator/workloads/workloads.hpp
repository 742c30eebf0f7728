#pragma once
// Workload drivers run by the scenario worker inside one rank process.
// Both block until the workload finishes and throw the first error (a
// distributed error from a collective, ValueError for a bad request).
#include <vector>

#include "emulator/faults/fault_plan.hpp"
#include "emulator/workloads/rank_result.hpp"
#include "emulator/workloads/workload_spec.hpp"
#include "runtime/comm/process_group.hpp"

namespace distlab::emulator {

// Runs the collective script `steps` on `world` (subgroups are created from
// it) `iterations` times, each inside a "step <i>" trace span (so a traced
// script is a run `distlab predict` can replay). Collectives issued with
// `async` are waited for by the next `wait` step, or at the end of the
// iteration. The script's tensors live on `device`.
void runCollectiveWorkload(const std::vector<CollectiveStep>& steps,
                           const comm::ProcessGroupPtr& world, FaultPlan& plan,
                           int iterations = 1, Device device = Device::cpu());

// What a training run needs beyond its TrainingWorkload.
struct TrainingRunOptions {
  int worldSize = 1;
  // params_match_reference: rank 0 checks the engine against the
  // single-process reference (reference_check.hpp) at every step.
  bool checkReference = false;
  // loss_decreased: the loss on one fixed batch before training and after it
  // (Note [Loss on one batch] in training_workload.cpp). Sharding engines
  // gather their parameters for it after the last step, so every rank does.
  bool probeLoss = false;
  // Where the model, data, engine and the checks' models live (Note
  // [Scenarios on a GPU] in emulator/scenario/scenario_device.hpp).
  Device device = Device::cpu();
};

// Runs the training workload; fills losses, checksum and the reference check.
// `world` is null when the engine is not distributed.
void runTrainingWorkload(const TrainingWorkload& tr, const TrainingRunOptions& options, int rank,
                         const comm::ProcessGroupPtr& world, FaultPlan& plan, RankResult& result);

}  // namespace distlab::emulator
