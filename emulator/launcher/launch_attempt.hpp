#pragma once
// One attempt (round) of a launch: meet the other nodes, start this node's
// ranks, monitor them until they all end, and meet the other nodes again.
//
// Note [Launcher rounds]: attempt n uses store keys under
// "launch/<run-id>/attempt_<n>/": "nodes" (a counter; the node that completes
// it sets "go", which every node waits for), "failed" (set by the first node
// whose rank fails; every node polls it each monitor interval and stops its
// ranks) and "done/<node>" (set when all of a node's ranks succeeded; node 0,
// which hosts the store, waits for every node's "done" before it exits). The
// ranks of attempt n get DISTLAB_STORE_PREFIX=<run-id>/attempt_<n>, so a
// restarted group never sees keys from an earlier attempt.
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "emulator/launcher/launcher.hpp"
#include "emulator/launcher/output_pump.hpp"
#include "runtime/comm/store/store.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::emulator::detail {

struct AttemptResult {
  bool succeeded = false;
  bool timedOut = false;
  int interruptSignal = 0;
  int failedRank = -1;
  bool remoteFailure = false;
  bool leftoverProcesses = false;
  std::vector<RankOutcome> ranks;
  std::string stackDump;
};

class AttemptRunner {
 public:
  AttemptRunner(const LaunchOptions& options, comm::Store& store, int attempt, int masterPort,
                int wakeFd, std::atomic<int>& stopSignal);
  // Kills and reaps any rank still running (only reached on an error path).
  ~AttemptRunner();
  AttemptRunner(const AttemptRunner&) = delete;
  AttemptRunner& operator=(const AttemptRunner&) = delete;
  // Throws Error when a rank cannot be started, DistError when the nodes
  // cannot meet.
  AttemptResult run();

 private:
  std::string key(const std::string& name) const { return keyPrefix_ + name; }
  void meetNodes();
  void startRanks(OutputPump& pump);
  void monitor(OutputPump& pump);
  void reap();
  void stopAll(int signal);
  void onFirstFailure(const RankOutcome& failed);
  void stopAfterFailure();
  void killLeftovers();
  void onTimeout();
  bool waitForOtherNodes();
  // `releaseVar`: DISTLAB_LAUNCH_RELEASE_FD=<fd> (Note [Ranks released
  // together] in runtime/comm/store/rendezvous.hpp).
  std::vector<std::string> rankEnvironment(int localRank, const std::string& releaseVar) const;
  std::string logPath(int rank) const;
  void message(const std::string& text) const;
  bool anyRunning() const;
  // store.check(), where a lost store (node 0 gone) counts as a remote failure.
  bool remoteFailed();

  const LaunchOptions& options_;
  comm::Store& store_;
  int attempt_;
  int masterPort_;
  int wakeFd_;
  std::atomic<int>& stopSignal_;
  std::string keyPrefix_;
  std::string logDir_;
  AttemptResult result_;
  std::vector<bool> running_;
  bool stopping_ = false;
  bool killed_ = false;
  std::optional<Deadline> graceEnds_;  // --failure-grace after the first failure
};

}  // namespace distlab::emulator::detail
