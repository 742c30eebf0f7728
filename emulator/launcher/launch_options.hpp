#pragma once
// Options of `distlab launch` and of the Launcher library API (torchrun's
// flags, C++ style). validateLaunchOptions() throws ValueError naming the
// flag (`--nproc-per-node`, ...) and what would fix it.
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace distlab::emulator {

struct LaunchOptions {
  int nprocPerNode = 1;                 // --nproc-per-node
  int nnodes = 1;                       // --nnodes
  int nodeRank = 0;                     // --node-rank
  std::string masterAddr = "127.0.0.1"; // --master-addr: node 0's address
  int masterPort = 29500;               // --master-port; 0 picks a free port (1 node only)
  int maxRestarts = 0;                  // --max-restarts: group restarts after a failure
  std::chrono::milliseconds monitorInterval{100};  // --monitor-interval (seconds on the CLI)
  std::string runId = "none";           // --run-id (TORCHELASTIC_RUN_ID)
  std::string logDir;                   // --log-dir: per-rank logs; empty = none
  std::chrono::milliseconds timeout{0}; // --timeout: whole run per attempt; 0 = none
  std::chrono::milliseconds stopGracePeriod{3000};     // --stop-grace: SIGTERM -> SIGKILL
  // --failure-grace: after the first rank of an attempt fails, the others get
  // this long to end on their own (say, to report the failed peer) before
  // they are stopped; 0 stops them at once (torchrun's behaviour).
  std::chrono::milliseconds failureGrace{0};
  std::chrono::milliseconds rendezvousTimeout{600000}; // --rdzv-timeout: nodes meeting
  bool dumpStacksOnTimeout = true;      // gdb stack dump of live ranks on --timeout
  std::vector<std::string> program;     // the program and its arguments
  std::vector<std::pair<std::string, std::string>> extraEnv;  // added to every rank
  std::string workingDir;               // every rank's; empty: the launcher's
  // Receives every output line of every rank (without the "[rank N]:" prefix);
  // unset: prefixed lines go to the launcher's stdout/stderr.
  std::function<void(int rank, bool isStderr, const std::string& line)> onOutput;
  // Receives the launcher's own messages (restarts, stack dumps, the
  // summary); unset: stderr.
  std::function<void(const std::string& text)> onMessage;
};

void validateLaunchOptions(const LaunchOptions& options);

}  // namespace distlab::emulator
