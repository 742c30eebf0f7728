#pragma once
// Where a program workload's ranks start (kind = "program"; Note [Programs
// under a scenario] in runtime/comm/init_hook.hpp): its command resolved to
// an executable file, its working directory, and the environment the runner
// adds for it.
#include <map>
#include <string>
#include <vector>

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

}  // namespace distlab::emulator
