#pragma once
// Where a scenario's ranks put their tensors, and whether this machine can
// run a scenario that asks for a GPU.
//
// Note [Scenarios on a GPU]
// `[cluster] device = "cuda"` puts every rank's model, data, engine state and
// collective buffers on cuda:(rank mod visible GPUs):
//   - backend = "nccl": NCCL on the device, one GPU per rank (NCCL refuses
//     two ranks of one communicator on one device);
//   - backend = "shm" | "gloo": the host backend with CUDA tensors staged
//     through pinned memory (Note [CUDA tensors on host backends]), so several
//     ranks may share one GPU.
// Without a usable device the scenario is not run at all: the runner reports
// it skipped with the reason (`distlab run` prints SKIP and, when nothing
// else ran, exits kSkippedExitCode, which CTest reports as a skip); never a
// pass, never a failure. The single-process reference and the loss probe run
// on the rank's own device, so that they recompute the engine's local
// gradients with the same kernels (the same bits; Note [Checking an engine
// against the single-process reference]).
#include <optional>
#include <string>

#include "emulator/scenario/scenario.hpp"
#include "runtime/tensor/device.hpp"

namespace distlab::emulator {

// `distlab run`'s exit code when every scenario it was given was skipped
// (CTest's SKIP_RETURN_CODE for scenario tests; automake's "skipped" code).
inline constexpr int kSkippedExitCode = 77;

// Why this machine cannot run `s` ("no CUDA device: ...", "backend nccl needs
// one GPU per rank: ..."); nullopt when it can (always for device = "cpu").
std::optional<std::string> deviceSkipReason(const Scenario& s);

// The device of `rank`'s tensors: cpu, or cuda:(rank mod visible GPUs).
// Throws DistBackendError naming the reason when the scenario wants a GPU
// and none is usable (the runner checks first; a rank started by hand may not).
Device scenarioRankDevice(const Scenario& s, int rank);

}  // namespace distlab::emulator
