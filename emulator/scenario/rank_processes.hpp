#pragma once
// Starts the ranks of one scenario as child processes and watches them until
// all have ended, with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT).
//
// The ranks form one process group of their own (setpgid) and die with the
// runner (PR_SET_PDEATHSIG), so nothing outlives a run. Policy:
//   - after the first rank fails (non-zero exit or signal), the others get
//     `grace` to finish reporting (they usually fail on their own, naming the
//     peer); then SIGTERM, and SIGKILL 1 s later ("killed: teardown");
//   - at `deadline` every rank still running is killed ("killed: deadline").
// Blocks until every rank is reaped (bounded by deadline + grace + 2 s).
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace distlab::emulator {

struct RankLaunch {
  std::string executable;
  std::vector<std::string> args;        // argv[1..]
  std::map<std::string, std::string> env;  // added to the runner's environment
  int worldSize = 1;
  double deadlineS = 60;
  double graceS = 3;
  std::string logDir;                   // rank<R>.log gets stdout+stderr
};

struct RankExit {
  int rank = -1;
  pid_t pid = -1;
  int exitCode = -1;          // when exited normally
  int signal = 0;             // when killed by a signal
  std::string killedBy;       // "" | "teardown" | "deadline"
  int64_t endUs = 0;          // wall clock when reaped
  bool ok() const { return signal == 0 && exitCode == 0; }
};

struct LaunchOutcome {
  std::vector<RankExit> ranks;
  bool leftoverProcesses = false;  // a process of the group survived reaping
  int64_t firstFailureUs = 0;      // wall clock the first failure was seen (0: none)
};

LaunchOutcome launchRanks(const RankLaunch& launch);

// "SIGKILL", "SIGABRT", ... or "signal N".
std::string signalName(int signal);

}  // namespace distlab::emulator
