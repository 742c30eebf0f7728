#include "emulator/scenario/rank_processes.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "emulator/launcher/launcher.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {

std::string signalName(int signal) {
  switch (signal) {
    case SIGKILL: return "SIGKILL";
    case SIGABRT: return "SIGABRT";
    case SIGTERM: return "SIGTERM";
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGINT: return "SIGINT";
    default: return "signal " + std::to_string(signal);
  }
}

namespace {

using FilePtr = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

FilePtr openLog(const std::string& path) {
  FilePtr f(std::fopen(path.c_str(), "w"), &std::fclose);
  if (!f) throw Error(fmt::format("cannot write the rank log '{}'", path));
  return f;
}

LaunchOptions optionsFor(const RankLaunch& l) {
  LaunchOptions o;
  o.nprocPerNode = l.worldSize;
  o.masterPort = 0;  // a free port on the loopback interface
  o.runId = "scenario";
  o.monitorInterval = std::chrono::milliseconds(10);
  o.timeout = millisecondsFromSeconds(l.deadlineS);
  o.failureGrace = millisecondsFromSeconds(l.graceS);
  o.stopGracePeriod = std::chrono::milliseconds(1000);
  o.dumpStacksOnTimeout = false;
  o.program = {l.executable};
  o.program.insert(o.program.end(), l.args.begin(), l.args.end());
  for (const auto& [name, value] : l.env) o.extraEnv.emplace_back(name, value);
  o.workingDir = l.workingDir;
  return o;
}

RankExit exitOf(const RankOutcome& o, bool timedOut) {
  RankExit e;
  e.rank = o.rank;
  e.pid = o.pid;
  e.exitCode = o.exited ? o.exitCode : -1;
  e.signal = o.signal;
  if (o.stoppedByLauncher) e.killedBy = timedOut ? "deadline" : "teardown";
  e.endUs = o.endUs;
  return e;
}

}  // namespace

LaunchOutcome launchRanks(const RankLaunch& l) {
  LaunchOptions o = optionsFor(l);
  std::vector<FilePtr> logs;
  for (int r = 0; r < l.worldSize; ++r) {
    logs.push_back(openLog(fmt::format("{}/rank{}.log", l.logDir, r)));
  }
  FilePtr launcherLog = openLog(l.logDir + "/launcher.log");
  o.onOutput = [&](int rank, bool, const std::string& line) {
    std::fprintf(logs[static_cast<size_t>(rank)].get(), "%s\n", line.c_str());
  };
  o.onMessage = [&](const std::string& text) {
    std::fprintf(launcherLog.get(), "%s\n", text.c_str());
  };
  LaunchResult result = Launcher(o).run();
  if (!result.error.empty()) throw Error(result.error);
  LaunchOutcome outcome;
  outcome.leftoverProcesses = result.leftoverProcesses;
  for (const auto& rank : result.ranks) {
    outcome.ranks.push_back(exitOf(rank, result.timedOut));
    if (rank.rank == result.failedRank) outcome.firstFailureUs = rank.endUs;
  }
  return outcome;
}

}  // namespace distlab::emulator
