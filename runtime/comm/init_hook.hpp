#pragma once
// A seam in initProcessGroup for the emulator's scenario runs of a user's own
// program (Note [Programs under a scenario]).
//
// Note [Programs under a scenario]
// `distlab run` starts a user's program once per rank with torchrun's
// variables plus DISTLAB_SCENARIO (the scenario file) and
// DISTLAB_SCENARIO_RESULT_DIR (where the rank reports). The program creates
// its process group as it always does; initProcessGroup then hands the
// scenario's setup to the one registered InitHook, which the emulator's
// `distlab::program` target registers when the program links it (no call in
// the program). The hook installs what a built-in workload's rank installs
// (debug level, fault plan and injection, link emulation, tracing, the rank's
// result file) at the same points of initialization:
//   - prepare:   before the rendezvous; may set the backend and timeout the
//                scenario names (the scenario describes the cluster, so it wins
//                over the program's choice);
//   - wrapStore: after the rendezvous, before any group exists; returns the
//                store every group will use (store faults) and may use the
//                plain store first (the trace's clock alignment).
// Without the variable the hook is never called: the same program runs
// unchanged under `distlab launch` or torchrun's equivalent. With it and no
// hook, initProcessGroup throws a ValueError naming the missing link: a
// scenario whose faults silently do not apply would pass for the wrong reason.
#include <functional>
#include <memory>

#include "runtime/comm/group_management.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab::comm {

struct InitHook {
  std::function<void(InitOptions& options, const RuntimeEnv& env)> prepare;
  std::function<std::shared_ptr<Store>(std::shared_ptr<Store> store, int rank, int worldSize)>
      wrapStore;
};

// Process-wide, as the backend registry is; the last registration wins.
// Throws ValueError when a callback is missing.
void setInitHook(InitHook hook);
// Whether one is registered (its test).
bool hasInitHook();

namespace detail {
// initProcessGroup's use: the hook when env.scenarioFile is set, else none;
// throws ValueError when the variable is set and no hook is registered.
const InitHook* initHookFor(const RuntimeEnv& env);
}  // namespace detail

}  // namespace distlab::comm
