#pragma once
// Where a program workload's ranks start (kind = "program"; Note [Programs
// under a scenario] in runtime/comm/init_hook.hpp): its command resolved to
// an executable file, its working directory, and the environment the runner
// adds for it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "emulator/scenario/diagnosis.hpp"
#include "emulator/scenario/scenario.hpp"

namespace distlab::emulator {

struct ResolvedProgram {
  std::vector<std::string> argv;  // argv[0]: an absolute path to an executable file
  std::string workingDir;         // absolute
  std::map<std::string, std::string> env;
};

// command[0]: `programOverride` when given (`distlab run --program`); else a
// path relative to the scenario file's folder when it holds a '/'; else the
// first executable of that name in `searchPath` (PATH's form). The working
// directory is `cwd` relative to the scenario's folder (that folder when
// empty). Throws ValueError "file:line: ..." naming what was looked for and
// where, for a missing or non-executable program or working directory.
ResolvedProgram resolveProgram(const Scenario& scenario, const std::string& programOverride,
                               const std::string& searchPath);

// What only a program's run can get wrong, as failure messages: a scenario
// with faults of which none fired (the parser cannot count a program's
// operations, so a trigger it never reaches would let the scenario pass for
// the wrong reason), and a rank that exited 0 without creating its process
// group under the scenario (nothing of the scenario applied to it).
std::vector<std::string> checkProgramRun(const Scenario& scenario,
                                         const std::vector<RankExit>& exits,
                                         const std::vector<std::optional<RankResult>>& results,
                                         const Diagnosis& diagnosis, const std::string& runDir);

}  // namespace distlab::emulator
