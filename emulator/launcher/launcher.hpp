#pragma once
// Launcher: torchrun-style process launcher, usable as a library (the
// scenario runner starts ranks through it) and as `distlab launch`.
//
//   LaunchOptions o;
//   o.nprocPerNode = 4;
//   o.program = {"./train", "--steps", "10"};
//   LaunchResult r = Launcher(o).run();   // blocks until the job ends
//   if (r.exitCode != 0) std::cerr << r.summary;
//
// Per attempt the launcher starts nprocPerNode ranks on this node with RANK,
// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK,
// ROLE_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID,
// TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS, and
// DISTLAB_STORE_EXTERNAL=1 / DISTLAB_STORE_PREFIX=<run-id>/attempt_<n> (see
// runtime/comm/store/rendezvous.hpp). Node 0 hosts the TCP store server on
// --master-port for the launchers and the ranks; nodes meet per attempt
// through it (Note [Launcher rounds]).
//
// Every output line of a rank is passed on prefixed with "[rank N]:" (and
// teed into <log-dir>/<run-id>/attempt_<n>/rank_<N>.log). When a rank fails
// (non-zero exit or a signal) the others get failureGrace to end on their
// own, then SIGTERM, then SIGKILL after stopGracePeriod; with maxRestarts left
// the whole group restarts in a new attempt. When an attempt ends, whatever a
// rank left in its process group is SIGKILLed (leftoverProcesses). --timeout dumps every live rank's stacks (gdb) into the log and
// stops the run; the summary names the function each rank was blocked in.
// requestStop(sig) (SIGINT/SIGTERM handlers) forwards sig to every rank. No
// rank outlives the launcher (Note [Rank process lifetime]), nor does
// anything a rank started: each rank's process group is registered with the
// ExitGuard (exit_guard.hpp), which SIGKILLs it if the launcher is killed.
//
// Threading: run() forks the ranks and must stay on one thread until it
// returns (the ranks' death signal is tied to that thread). requestStop may be
// called from a signal handler or any thread.
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "emulator/launcher/launch_options.hpp"

namespace distlab::emulator {

struct RankOutcome {
  int rank = -1;
  int localRank = -1;
  pid_t pid = -1;
  bool started = false;
  int status = 0;               // waitpid status
  bool exited = false;          // WIFEXITED
  int exitCode = 0;             // when exited
  int signal = 0;               // when killed by a signal
  bool stoppedByLauncher = false;  // it was still running when the launcher stopped the group
  int64_t endUs = 0;            // wall clock (us since the epoch) when it was reaped
  std::string firstErrorLine;   // see OutputPump::firstErrorLine
  std::string blockedIn;        // --timeout: function the rank was blocked in
  bool succeeded() const { return started && exited && exitCode == 0; }
  // "ok", "exit code 3", "signal 9 (SIGKILL)", "stopped: signal 15 (SIGTERM)".
  std::string describe() const;
};

struct LaunchResult {
  int exitCode = 0;        // 0 ok, 1 a rank failed, 124 --timeout, 128+sig interrupted, 2 setup
  int attempts = 0;        // attempts started (restarts = attempts - 1)
  bool timedOut = false;
  int interruptSignal = 0; // the signal requestStop forwarded, 0 if none
  int failedRank = -1;     // first failed rank of the last attempt (global rank), -1 if none
  bool remoteFailure = false;  // another node reported the failure
  int masterPort = 0;      // the TCP store port actually used
  bool leftoverProcesses = false;  // a rank's process group outlived the rank (then killed)
  std::vector<RankOutcome> ranks;  // this node's ranks, last attempt, by local rank
  std::string stackDump;   // --timeout dumps (empty otherwise)
  std::string summary;     // the failure table ("" on success)
  std::string error;       // setup failure (bad port, program not found)
};

class Launcher {
 public:
  // Throws ValueError for invalid options (naming the flag).
  explicit Launcher(LaunchOptions options);
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  LaunchResult run();
  // Async-signal-safe: forward `signal` to every rank and end the run.
  void requestStop(int signal) noexcept;

 private:
  LaunchOptions options_;
  int wake_[2] = {-1, -1};
  std::atomic<int> stopSignal_{0};
};

// The failure table: rank, local rank, pid, result, first error line (and the
// blocked-in function after a timeout).
std::string formatSummary(const LaunchResult& result, const LaunchOptions& options);

}  // namespace distlab::emulator
