#pragma once
// Workload drivers run by the scenario worker inside one rank process.
// Both block until the workload finishes and throw the first error (a
// distributed error from a collective, ValueError for a bad request).
#include "emulator/faults/fault_plan.hpp"
#include "emulator/scenario/rank_result.hpp"
#include "emulator/scenario/scenario.hpp"
#include "runtime/comm/process_group.hpp"

namespace distlab::emulator {

// Runs the collective script on `world` (subgroups are created from it).
void runCollectiveWorkload(const Scenario& s, const comm::ProcessGroupPtr& world, FaultPlan& plan);

// Runs the training workload; fills losses, checksum and the reference check.
// `world` is null when the engine is not distributed.
void runTrainingWorkload(const Scenario& s, int rank, const comm::ProcessGroupPtr& world,
                         FaultPlan& plan, RankResult& result);

}  // namespace distlab::emulator
