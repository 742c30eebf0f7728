#include "emulator/launcher/launch_attempt.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "emulator/launcher/child_process.hpp"
#include "emulator/launcher/exit_guard.hpp"
#include "emulator/launcher/output_pump.hpp"
#include "emulator/launcher/stack_dump.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator::detail {
namespace {

constexpr std::chrono::milliseconds kGdbLimit{20000};
constexpr std::chrono::milliseconds kDrainLimit{500};

void defaultSink(int rank, bool isStderr, const std::string& line) {
  std::string text = fmt::format("[rank {}]:{}\n", rank, line);
  std::FILE* out = isStderr ? stderr : stdout;
  std::fwrite(text.data(), 1, text.size(), out);
  std::fflush(out);
}

}  // namespace

AttemptRunner::AttemptRunner(const LaunchOptions& options, comm::Store& store, int attempt,
                             int masterPort, int wakeFd, std::atomic<int>& stopSignal)
    : options_(options),
      store_(store),
      attempt_(attempt),
      masterPort_(masterPort),
      wakeFd_(wakeFd),
      stopSignal_(stopSignal),
      keyPrefix_(fmt::format("launch/{}/attempt_{}/", options.runId, attempt)) {
  if (!options_.logDir.empty()) {
    logDir_ = fmt::format("{}/{}/attempt_{}", options_.logDir, options_.runId, attempt_);
    std::error_code ec;
    std::filesystem::create_directories(logDir_, ec);
    if (ec) {
      throw ValueError(fmt::format("--log-dir: cannot create '{}': {}", logDir_, ec.message()));
    }
  }
}

AttemptRunner::~AttemptRunner() {
  if (!anyRunning()) return;
  stopAll(SIGKILL);
  for (size_t i = 0; i < running_.size(); ++i) {
    if (running_[i]) ::waitpid(result_.ranks[i].pid, nullptr, 0);
    running_[i] = false;
  }
  killLeftovers();
}

bool AttemptRunner::remoteFailed() {
  try {
    if (!store_.check({key("failed")})) return false;
    message(fmt::format("another node failed ({})", store_.getString(key("failed"))));
  } catch (const DistError& e) {
    message(fmt::format("lost the launchers' store ({}); treating it as a failed node", e.what()));
  }
  result_.remoteFailure = true;
  return true;
}

void AttemptRunner::message(const std::string& text) const {
  if (options_.onMessage) {
    options_.onMessage(text);
  } else {
    std::fprintf(stderr, "[launcher] %s\n", text.c_str());
    std::fflush(stderr);
  }
}

std::string AttemptRunner::logPath(int rank) const {
  return logDir_.empty() ? "" : fmt::format("{}/rank_{}.log", logDir_, rank);
}

void AttemptRunner::meetNodes() {
  if (options_.nnodes == 1) return;
  if (store_.add(key("nodes"), 1) == options_.nnodes) store_.setString(key("go"), "1");
  try {
    store_.wait({key("go")}, options_.rendezvousTimeout);
  } catch (const DistStoreError&) {
    throw DistStoreError(fmt::format("attempt {}: not all {} nodes joined within --rdzv-timeout "
                                     "({} ms)", attempt_, options_.nnodes,
                                     options_.rendezvousTimeout.count()));
  }
}

std::vector<std::string> AttemptRunner::rankEnvironment(int localRank,
                                                        const std::string& releaseVar) const {
  int worldSize = options_.nnodes * options_.nprocPerNode;
  int rank = options_.nodeRank * options_.nprocPerNode + localRank;
  std::vector<std::string> env = {
      fmt::format("RANK={}", rank),
      fmt::format("LOCAL_RANK={}", localRank),
      fmt::format("WORLD_SIZE={}", worldSize),
      fmt::format("LOCAL_WORLD_SIZE={}", options_.nprocPerNode),
      fmt::format("GROUP_RANK={}", options_.nodeRank),
      fmt::format("GROUP_WORLD_SIZE={}", options_.nnodes),
      fmt::format("ROLE_RANK={}", rank),
      fmt::format("ROLE_WORLD_SIZE={}", worldSize),
      fmt::format("MASTER_ADDR={}", options_.masterAddr),
      fmt::format("MASTER_PORT={}", masterPort_),
      fmt::format("TORCHELASTIC_RUN_ID={}", options_.runId),
      fmt::format("TORCHELASTIC_RESTART_COUNT={}", attempt_),
      fmt::format("TORCHELASTIC_MAX_RESTARTS={}", options_.maxRestarts),
      "DISTLAB_STORE_EXTERNAL=1",
      fmt::format("DISTLAB_STORE_PREFIX={}/attempt_{}", options_.runId, attempt_),
      releaseVar,
  };
  for (const auto& [name, value] : options_.extraEnv) env.push_back(name + "=" + value);
  return environmentWith(env);
}

void AttemptRunner::startRanks(OutputPump& pump) {
  int n = options_.nprocPerNode;
  result_.ranks.resize(static_cast<size_t>(n));
  running_.assign(static_cast<size_t>(n), false);
  // Note [Ranks released together]: every rank inherits the read end; only
  // the launcher holds the write end (close-on-exec), closed once all started.
  int release[2];
  if (::pipe2(release, 0) != 0 || ::fcntl(release[1], F_SETFD, FD_CLOEXEC) != 0) {
    throw Error(fmt::format("launcher: pipe failed: {}", ::strerror(errno)));
  }
  const std::string releaseVar = fmt::format("DISTLAB_LAUNCH_RELEASE_FD={}", release[0]);
  struct ClosePipe {
    int* fds;
    ~ClosePipe() { ::close(fds[0]), ::close(fds[1]); }
  } closeRelease{release};
  for (int local = 0; local < n; ++local) {
    RankOutcome& o = result_.ranks[static_cast<size_t>(local)];
    o.localRank = local;
    o.rank = options_.nodeRank * n + local;
    ChildProcess child;
    try {
      // Registered before it can start anything (Note [Exit guard]).
      child = startChild(ChildSpec{options_.program, rankEnvironment(local, releaseVar),
                                   options_.workingDir,
                                   [](pid_t pid) { ExitGuard::instance().killGroupOnExit(pid); }});
    } catch (const Error&) {
      stopAll(SIGKILL);
      reap();
      throw;
    }
    o.pid = child.pid;
    o.started = true;
    running_[static_cast<size_t>(local)] = true;
    pump.addRank(o.rank, child.stdoutFd, child.stderrFd, logPath(o.rank));
  }
}

bool AttemptRunner::anyRunning() const {
  for (bool r : running_) {
    if (r) return true;
  }
  return false;
}

void AttemptRunner::stopAll(int signal) {
  for (size_t i = 0; i < running_.size(); ++i) {
    if (!running_[i]) continue;
    result_.ranks[i].stoppedByLauncher = true;
    ::kill(-result_.ranks[i].pid, signal);  // the rank's process group
    ::kill(result_.ranks[i].pid, signal);   // in case it left its group
  }
}

void AttemptRunner::reap() {
  for (size_t i = 0; i < running_.size(); ++i) {
    if (!running_[i]) continue;
    RankOutcome& o = result_.ranks[i];
    int status = 0;
    if (::waitpid(o.pid, &status, WNOHANG) != o.pid) continue;
    running_[i] = false;
    o.endUs = wallClockNowUs();
    o.status = status;
    o.exited = WIFEXITED(status);
    o.exitCode = o.exited ? WEXITSTATUS(status) : 0;
    o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    if (o.succeeded() || o.stoppedByLauncher || stopping_ || result_.failedRank >= 0) continue;
    onFirstFailure(o);
  }
}

void AttemptRunner::onFirstFailure(const RankOutcome& o) {
  result_.failedRank = o.rank;
  if (options_.failureGrace.count() > 0 && anyRunning()) {
    message(fmt::format("rank {} (pid {}) failed with {}; the other ranks get {} ms to finish",
                        o.rank, o.pid, o.describe(), options_.failureGrace.count()));
    graceEnds_ = Deadline::after(options_.failureGrace);
    return;
  }
  message(fmt::format("rank {} (pid {}) failed with {}; stopping the other ranks", o.rank, o.pid,
                      o.describe()));
  stopAfterFailure();
}

// Stops this node's ranks after a local failure and tells the other nodes.
void AttemptRunner::stopAfterFailure() {
  if (options_.nnodes > 1) {
    try {
      store_.setString(key("failed"),
                       fmt::format("node {} rank {}", options_.nodeRank, result_.failedRank));
    } catch (const DistError& e) {
      message(fmt::format("could not tell the other nodes: {}", e.what()));
    }
  }
  stopping_ = true;
  stopAll(SIGTERM);
}

// Whatever a reaped rank left in its process group (grandchildren) is killed
// when the attempt ends; the groups are then forgotten by the exit guard.
void AttemptRunner::killLeftovers() {
  for (const auto& o : result_.ranks) {
    if (!o.started) continue;
    if (::kill(-o.pid, 0) == 0) {
      result_.leftoverProcesses = true;
      message(fmt::format("rank {} left processes in its process group {}; killing them",
                          o.rank, o.pid));
      ::kill(-o.pid, SIGKILL);
    }
    ExitGuard::instance().forgetGroup(o.pid);
  }
}

void AttemptRunner::onTimeout() {
  result_.timedOut = true;
  message(fmt::format("--timeout ({} ms) passed; dumping the stacks of the live ranks",
                      options_.timeout.count()));
  std::vector<size_t> live;
  std::vector<pid_t> pids;
  for (size_t i = 0; i < running_.size(); ++i) {
    if (!running_[i] || !options_.dumpStacksOnTimeout) continue;
    live.push_back(i);
    pids.push_back(result_.ranks[i].pid);
  }
  std::vector<std::string> dumps = dumpStacks(pids, kGdbLimit);
  for (size_t j = 0; j < live.size(); ++j) {
    RankOutcome& o = result_.ranks[live[j]];
    o.blockedIn = blockedFunction(dumps[j], o.pid);
    std::string block = fmt::format("===== rank {} (pid {}) stacks; blocked in {} =====\n{}",
                                    o.rank, o.pid, o.blockedIn.empty() ? "?" : o.blockedIn,
                                    dumps[j]);
    result_.stackDump += block;
    message(block);
  }
  if (!logDir_.empty() && !result_.stackDump.empty()) {
    if (std::FILE* f = std::fopen((logDir_ + "/stacks.log").c_str(), "w")) {
      std::fputs(result_.stackDump.c_str(), f);
      std::fclose(f);
    }
  }
}

void AttemptRunner::monitor(OutputPump& pump) {
  std::optional<Deadline> runDeadline;
  if (options_.timeout.count() > 0) runDeadline = Deadline::after(options_.timeout);
  std::optional<Deadline> killAt;
  while (anyRunning()) {
    pump.pumpOnce(options_.monitorInterval, wakeFd_);
    char drainBuf[64];
    while (::read(wakeFd_, drainBuf, sizeof(drainBuf)) > 0) {
    }
    reap();
    int sig = stopSignal_.load();
    if (sig != 0 && result_.interruptSignal == 0) {
      result_.interruptSignal = sig;
      message(fmt::format("received signal {}; forwarding it to every rank", sig));
      stopping_ = true;
      stopAll(sig);
    }
    if (!stopping_ && options_.nnodes > 1 && remoteFailed()) {
      message("stopping this node's ranks");
      stopping_ = true;
      stopAll(SIGTERM);
    }
    if (!stopping_ && graceEnds_ && graceEnds_->expired()) {
      message("--failure-grace passed; stopping the other ranks");
      stopAfterFailure();
    }
    if (!stopping_ && runDeadline && runDeadline->expired()) {
      onTimeout();
      stopping_ = true;
      stopAll(SIGTERM);
    }
    if (stopping_ && !killAt) killAt = Deadline::after(options_.stopGracePeriod);
    if (killAt && killAt->expired() && !killed_) {
      killed_ = true;
      stopAll(SIGKILL);
    }
  }
  killLeftovers();
  pump.drain(kDrainLimit);
  for (auto& o : result_.ranks) o.firstErrorLine = pump.firstErrorLine(o.rank);
}

bool AttemptRunner::waitForOtherNodes() {
  try {
    store_.setString(key(fmt::format("done/{}", options_.nodeRank)), "1");
    if (options_.nodeRank != 0) return true;  // only the store's host must stay
    std::vector<std::string> done;
    for (int n = 0; n < options_.nnodes; ++n) done.push_back(key(fmt::format("done/{}", n)));
    Deadline deadline = Deadline::after(
        options_.timeout.count() > 0 ? options_.timeout : options_.rendezvousTimeout);
    while (!store_.check(done)) {
      if (remoteFailed()) return false;
      if (stopSignal_.load() != 0 || deadline.expired()) return false;
      ::poll(nullptr, 0, static_cast<int>(options_.monitorInterval.count()));
    }
    return true;
  } catch (const DistError& e) {
    message(fmt::format("lost the launchers' store while finishing: {}", e.what()));
    result_.remoteFailure = true;
    return false;
  }
}

AttemptResult AttemptRunner::run() {
  meetNodes();
  OutputPump pump(options_.onOutput ? options_.onOutput : LineSink(defaultSink));
  startRanks(pump);
  monitor(pump);
  bool allOk = true;
  for (const auto& o : result_.ranks) allOk = allOk && o.succeeded();
  result_.succeeded = allOk && !stopping_;
  if (result_.succeeded && options_.nnodes > 1) result_.succeeded = waitForOtherNodes();
  return result_;
}

}  // namespace distlab::emulator::detail
