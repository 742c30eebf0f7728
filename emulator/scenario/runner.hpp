#pragma once
// The scenario runner behind `distlab run`: for each scenario file, start the
// ranks through the Launcher (rank_processes.hpp; it hosts the TCP store)
// running `distlab scenario-rank FILE --result-dir DIR`, diagnose the run
// (diagnosis.hpp), check the expectations, verify that nothing was left
// behind (processes, /dev/shm segments of the run's ranks), print one line,
// and write <out>/<name>.json (and <out>/<name>.trace.json when tracing).
// Without --out the results go to $TMPDIR/distlab-scenario-<pid>-<random>,
// which the exit guard removes even when `distlab run` is killed (Note [Exit
// guard]).
#include <optional>
#include <string>
#include <vector>

#include "emulator/scenario/diagnosis.hpp"
#include "emulator/scenario/scenario.hpp"
#include "emulator/trace/overlap_metrics.hpp"

namespace distlab::emulator {

struct RunOptions {
  std::string executable;   // the distlab binary (ranks run its scenario-rank command)
  std::string outDir;       // "" : results go to a temporary folder, removed afterwards
  bool trace = false;       // write a merged Chrome trace (also when the file says trace)
  bool verbose = false;     // print every failed check and the ranks' log tails
  // kind = "program": `distlab run --program PATH` replaces command[0] (a
  // CTest registration fills in the built target's path); `distlab launch
  // --scenario FILE PROG ARGS...` gives the whole command (ParseOptions).
  std::string program;
  std::vector<std::string> programCommand;
};

struct ScenarioReport {
  std::string path;
  std::string name;
  bool parsed = false;
  bool passed = false;
  // Set when this machine cannot run the scenario (no CUDA device for
  // device = "cuda"; Note [Scenarios on a GPU]): not run, neither passed nor failed.
  std::optional<std::string> skipped;
  Outcome expected = Outcome::kSuccess;
  Diagnosis diagnosis;
  double durationS = 0;
  std::vector<std::string> failures;  // failed checks ("file:line: ..." when parse failed)
  std::map<int, OverlapSummary> overlap;  // per rank, when the ranks traced
  std::vector<std::vector<double>> stepMs;  // per rank (empty for a rank without a result)
};

// Runs one scenario file; never throws for a bad file (the report says why).
ScenarioReport runScenario(const std::string& path, const RunOptions& options);

// Files named on the command line: a file as is, a folder searched
// recursively for *.toml (sorted). Throws ValueError for a missing path.
std::vector<std::string> collectScenarioFiles(const std::vector<std::string>& paths);

// Runs all, prints the table and the summary; returns the exit code (0 all
// that ran passed, 1 some failed, 2 some files were malformed,
// kSkippedExitCode (77) every scenario was skipped).
int runScenarios(const std::vector<std::string>& paths, const RunOptions& options);

}  // namespace distlab::emulator
