#include "emulator/scenario/rank_processes.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

extern char** environ;

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

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void execRank(const RankLaunch& l, pid_t pgid, const std::vector<char*>& argv,
                           const std::vector<char*>& envp, const std::string& logPath) {
  setpgid(0, pgid);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int fd = open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  execve(l.executable.c_str(), argv.data(), envp.data());
  _exit(127);
}

std::vector<std::string> rankEnvironment(const RankLaunch& l, int rank) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : l.env) env[k] = v;
  env["RANK"] = env["LOCAL_RANK"] = std::to_string(rank);
  env["WORLD_SIZE"] = env["LOCAL_WORLD_SIZE"] = std::to_string(l.worldSize);
  env["GROUP_RANK"] = "0";
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

LaunchOutcome launchRanks(const RankLaunch& l) {
  LaunchOutcome outcome;
  std::vector<std::string> argStrings{l.executable};
  argStrings.insert(argStrings.end(), l.args.begin(), l.args.end());
  std::vector<char*> argv;
  for (auto& a : argStrings) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pgid = 0;
  for (int rank = 0; rank < l.worldSize; ++rank) {
    auto envStrings = rankEnvironment(l, rank);
    std::vector<char*> envp;
    for (auto& e : envStrings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string logPath = l.logDir + "/rank" + std::to_string(rank) + ".log";
    pid_t pid = fork();
    if (pid < 0) throw Error(std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) execRank(l, pgid, argv, envp, logPath);
    if (pgid == 0) pgid = pid;
    setpgid(pid, pgid);  // also from the parent: no race with the first kill
    outcome.ranks.push_back(RankExit{rank, pid});
  }
  Deadline deadline = Deadline::after(std::chrono::milliseconds(static_cast<int64_t>(l.deadlineS * 1000)));
  int running = l.worldSize;
  int64_t termAtUs = 0, killAtUs = 0;
  std::string killReason;
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-pgid, &status, WNOHANG);
    if (pid > 0) {
      for (auto& r : outcome.ranks) {
        if (r.pid != pid) continue;
        r.endUs = wallClockNowUs();
        if (WIFEXITED(status)) r.exitCode = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
        if (!killReason.empty() && termAtUs > 0 && r.endUs >= termAtUs) r.killedBy = killReason;
        if (!r.ok() && outcome.firstFailureUs == 0 && r.killedBy.empty()) {
          outcome.firstFailureUs = r.endUs;
          termAtUs = r.endUs + static_cast<int64_t>(l.graceS * 1e6);
          killReason = "teardown";
        }
        --running;
      }
      continue;
    }
    int64_t now = wallClockNowUs();
    if (deadline.expired() && killReason != "deadline") {
      killReason = "deadline";
      termAtUs = now;
      kill(-pgid, SIGKILL);
    }
    if (termAtUs > 0 && now >= termAtUs && killAtUs == 0) {
      kill(-pgid, SIGTERM);
      killAtUs = now + 1000000;
    }
    if (killAtUs > 0 && now >= killAtUs) kill(-pgid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  outcome.leftoverProcesses = kill(-pgid, 0) == 0;
  if (outcome.leftoverProcesses) kill(-pgid, SIGKILL);
  return outcome;
}

}  // namespace distlab::emulator
