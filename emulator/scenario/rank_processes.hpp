#pragma once
// Starts the ranks of one scenario through the Launcher library
// (emulator/launcher/launcher.hpp) and turns its outcome into the runner's
// per-rank exits. The ranks get torchrun's environment (RANK, LOCAL_RANK,
// WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT and the
// launcher's store, DISTLAB_STORE_PREFIX), each rank is its own process group
// and nothing outlives the run, even when the runner is killed (Note [Rank
// process lifetime], Note [Exit guard]). Policy:
//   - after the first rank fails (non-zero exit or signal), the others get
//     `graceS` to finish reporting (the launcher's failureGrace: they usually
//     fail on their own, naming the peer); then SIGTERM, and SIGKILL 1 s later
//     ("killed: teardown");
//   - at `deadlineS` every rank still running is stopped the same way
//     ("killed: deadline").
// Blocks until every rank is reaped (bounded by deadline + grace + 1.5 s).
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
  std::string workingDir;               // the ranks'; empty: the runner's
  int worldSize = 1;
  double deadlineS = 60;
  double graceS = 3;
  std::string logDir;                   // rank<R>.log gets stdout+stderr, launcher.log the rest
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
  bool leftoverProcesses = false;  // a rank's process group outlived it (then killed)
  int64_t firstFailureUs = 0;      // wall clock the first failure was seen (0: none)
};

// Throws Error when the ranks cannot be started (the executable, the store).
LaunchOutcome launchRanks(const RankLaunch& launch);

// "SIGKILL", "SIGABRT", ... or "signal N".
std::string signalName(int signal);

}  // namespace distlab::emulator
