#pragma once
// The scenario worker: what `distlab scenario-rank FILE --result-dir DIR` runs
// in each rank process the runner starts. Reads RANK / WORLD_SIZE /
// MASTER_ADDR / MASTER_PORT from the environment (torchrun's variables),
// installs the scenario's fault plan, fault and link decorators, joins the
// process group through env:// (the store wrapped in FaultyStore), runs the
// workload, passes an exit barrier on the store (as torchelastic does), and
// writes rank<R>.json. Returns the process exit code: 0 on success, 1 when the
// workload failed (the error is in the JSON), 2 for a bad scenario or
// environment.
//
// After an error the process exits without tearing its groups down politely:
// peers may be stuck, and the shm segments are already unlinked (Note [shm
// segment lifecycle]), so nothing leaks.
#include <string>

namespace distlab::emulator {

// `trace`: record a trace (rank<R>.trace.json in resultDir; also when the
// scenario says trace = true or expects overlap metrics).
int runScenarioRank(const std::string& file, const std::string& resultDir, bool trace = false);

}  // namespace distlab::emulator
