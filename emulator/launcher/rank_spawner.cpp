#include "emulator/launcher/rank_spawner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "emulator/launcher/exit_guard.hpp"
#include "runtime/comm/debug/flight_recorder.hpp"
#include "runtime/comm/store/file_store.hpp"
#include "runtime/comm/store/hash_store.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::ranks {
namespace {

// The ranks' shared scratch directory $TMPDIR/distlab-ranks-*, removed with
// everything in it, even when the caller is killed (Note [Exit guard]).
class ScratchDir {
 public:
  ScratchDir() try : dir_("distlab-ranks-") {
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("spawn: cannot create a scratch directory: {} (set "
                                         "TMPDIR to a writable directory)", e.what()));
  }
  const std::string& path() const { return dir_.path(); }

 private:
  emulator::GuardedTempDir dir_;
};

constexpr size_t kMaxMessage = 32 * 1024;

struct Collected {
  std::vector<RankOutcome> outcomes;
  int firstFailure = -1;  // rank of the first unexpected failure, in arrival order
};

bool isFailure(const RankOutcome& o, const SpawnOptions& options) {
  if (o.ok) return false;
  return !(o.killed && options.mayDie.count(o.rank) != 0);
}

void noteOutcome(Collected& c, const RankOutcome& o, const SpawnOptions& options) {
  c.outcomes[static_cast<size_t>(o.rank)] = o;
  if (c.firstFailure < 0 && isFailure(o, options)) c.firstFailure = o.rank;
}

// Runs fn and describes how it ended: "" on success, "K" when killed, else
// "F<message>".
std::string runRank(const RankFn& fn, RankContext& ctx, const SpawnOptions& options) {
  try {
    fn(ctx);
    if (options.rankCheck) {
      std::string failure = options.rankCheck();
      if (!failure.empty()) return "F" + failure;
    }
  } catch (const RankKilled&) {
    return "K";
  } catch (const std::exception& e) {
    return std::string("F") + e.what();
  } catch (...) {
    return "Fnon-standard exception";
  }
  return "";
}

RankOutcome toOutcome(int rank, const std::string& code) {
  RankOutcome o;
  o.rank = rank;
  o.ok = code.empty();
  o.killed = code == "K";
  if (o.killed) o.error = "killed (killSelf)";
  if (!code.empty() && code[0] == 'F') o.error = code.substr(1);
  return o;
}

Collected runThreads(int worldSize, const RankFn& fn, const SpawnOptions& options) {
  ScratchDir dir;
  auto store = std::make_shared<comm::HashStore>(options.storeTimeout);
  Collected c;
  c.outcomes.resize(static_cast<size_t>(worldSize));
  std::mutex mutex;
  std::condition_variable finished;
  std::vector<bool> done(static_cast<size_t>(worldSize), false);
  int remaining = worldSize;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < worldSize; ++rank) {
    threads.emplace_back([&, rank] {
      RankContext ctx{rank, worldSize, SpawnMode::kThreads, store, dir.path()};
      RankOutcome o = toOutcome(rank, runRank(fn, ctx, options));
      std::lock_guard<std::mutex> lock(mutex);
      noteOutcome(c, o, options);
      done[static_cast<size_t>(rank)] = true;
      --remaining;
      finished.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mutex);
  if (!finished.wait_until(lock, Deadline::after(options.timeout).at(),
                           [&] { return remaining == 0; })) {
    std::vector<int> running;
    for (int r = 0; r < worldSize; ++r) {
      if (!done[static_cast<size_t>(r)]) running.push_back(r);
    }
    std::fprintf(stderr,
                 "spawn(threads): deadline of %lld ms passed; ranks still running: [%s]. Threads "
                 "cannot be killed, so the test process exits now.\n",
                 static_cast<long long>(options.timeout.count()),
                 fmt::format("{}", fmt::join(running, ", ")).c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }
  lock.unlock();
  for (auto& t : threads) t.join();
  return c;
}

[[noreturn]] void childMain(int rank, int worldSize, const RankFn& fn,
                            const SpawnOptions& options, const std::string& dir, int fd) {
  std::string code;
  {
    try {
      auto store = std::make_shared<comm::FileStore>(dir + "/store", worldSize,
                                                     options.storeTimeout);
      RankContext ctx{rank, worldSize, SpawnMode::kProcesses, store, dir};
      code = runRank(fn, ctx, options);
    } catch (const std::exception& e) {
      code = std::string("Fcould not open the shared FileStore: ") + e.what();
    }
  }
  if (code.empty()) code = "O";
  if (code.size() > kMaxMessage) code.resize(kMaxMessage);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ssize_t ignored = ::write(fd, code.data(), code.size());
  (void)ignored;
  comm::settleFlightRecorderDumps();  // no dump cut off by the _exit
  ::_exit(code == "O" ? 0 : 1);
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  std::string message;
  bool reaped = false;
};

void drain(Child& child) {
  char buf[4096];
  while (true) {
    ssize_t n = ::read(child.fd, buf, sizeof(buf));
    if (n > 0) {
      child.message.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return;
  }
}

RankOutcome childOutcome(int rank, Child& child, int status) {
  drain(child);
  if (!child.message.empty() && child.message != "O") return toOutcome(rank, child.message);
  RankOutcome o;
  o.rank = rank;
  if (WIFSIGNALED(status)) {
    o.killed = true;
    o.error = fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && child.message == "O") {
    o.ok = true;
  } else {
    o.error = fmt::format("exited with code {} without reporting a result",
                          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return o;
}

std::vector<int> runningRanks(const std::vector<Child>& children) {
  std::vector<int> running;
  for (size_t r = 0; r < children.size(); ++r) {
    if (!children[r].reaped) running.push_back(static_cast<int>(r));
  }
  return running;
}

// The ranks' process group (Note [Exit guard] in exit_guard.hpp): rank 0's
// pid once forked (0 before), and how many ranks are not reaped yet.
struct RankGroup {
  pid_t pgid = 0;
  int unreaped = 0;
};

// After waitpid reaped `pid`: the guard forgets it, and once no rank is left
// kills whatever the ranks left behind in their group.
void released(RankGroup& group, pid_t pid) {
  --group.unreaped;
  emulator::releaseGuardedRank(pid, group.pgid, group.unreaped == 0);
}

void killAndReap(std::vector<Child>& children, RankGroup& group) {
  for (auto& child : children) {
    if (child.pid > 0 && !child.reaped) ::kill(child.pid, SIGKILL);
  }
  for (auto& child : children) {
    if (child.pid <= 0) continue;  // never forked (a fork failed)
    if (!child.reaped) {
      ::waitpid(child.pid, nullptr, 0);
      released(group, child.pid);
    }
    child.reaped = true;
    ::close(child.fd);
  }
}

Collected runProcesses(int worldSize, const RankFn& fn, const SpawnOptions& options,
                       bool failFast) {
  ScratchDir dir;
  std::cout.flush();
  std::fflush(nullptr);
  std::vector<Child> children(static_cast<size_t>(worldSize));
  RankGroup group;
  for (int rank = 0; rank < worldSize; ++rank) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("spawn: pipe failed");
    pid_t pid = -1;
    try {
      pid = emulator::forkGuardedRank(group.pgid);
    } catch (const std::exception& e) {
      ::close(fds[0]);
      ::close(fds[1]);
      killAndReap(children, group);
      throw std::runtime_error(fmt::format("spawn: {}", e.what()));
    }
    if (pid == 0) {
      ::close(fds[0]);
      for (int r = 0; r < rank; ++r) ::close(children[static_cast<size_t>(r)].fd);
      childMain(rank, worldSize, fn, options, dir.path(), fds[1]);
    }
    ::close(fds[1]);
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    children[static_cast<size_t>(rank)] = Child{pid, fds[0], {}, false};
    ++group.unreaped;
  }
  Collected c;
  c.outcomes.resize(static_cast<size_t>(worldSize));
  Deadline deadline = Deadline::after(options.timeout);
  Deadline graceEnd = deadline;
  int left = worldSize;
  while (left > 0) {
    std::vector<pollfd> fds;
    for (auto& child : children) {
      if (!child.reaped) fds.push_back(pollfd{child.fd, POLLIN, 0});
    }
    int waitMs = static_cast<int>(std::min<int64_t>(graceEnd.remaining().count(), 20));
    ::poll(fds.data(), fds.size(), waitMs);
    for (int rank = 0; rank < worldSize; ++rank) {
      Child& child = children[static_cast<size_t>(rank)];
      if (child.reaped) continue;
      drain(child);
      int status = 0;
      if (::waitpid(child.pid, &status, WNOHANG) != child.pid) continue;
      child.reaped = true;
      released(group, child.pid);
      --left;
      bool hadFailure = c.firstFailure >= 0;
      noteOutcome(c, childOutcome(rank, child, status), options);
      if (failFast && !hadFailure && c.firstFailure >= 0) {
        graceEnd = Deadline(std::min(deadline.at(), Deadline::after(options.failFastGrace).at()));
      }
    }
    if (left > 0 && graceEnd.expired()) {
      std::vector<int> running = runningRanks(children);
      killAndReap(children, group);
      if (c.firstFailure >= 0 && !deadline.expired()) {
        for (int r : running) {
          RankOutcome& o = c.outcomes[static_cast<size_t>(r)];
          o.rank = r;
          o.killed = true;
          o.error = "killed by the spawner after another rank failed";
        }
        return c;
      }
      throw SpawnError(-1, fmt::format("spawn(processes): deadline of {} ms passed; ranks still "
                                       "running (now killed): [{}]{}",
                                       options.timeout.count(), fmt::join(running, ", "),
                                       c.firstFailure >= 0
                                           ? fmt::format("; first failure: rank {}: {}",
                                                         c.firstFailure,
                                                         c.outcomes[c.firstFailure].error)
                                           : ""));
    }
  }
  for (auto& child : children) ::close(child.fd);
  return c;
}

Collected run(SpawnMode mode, int worldSize, const RankFn& fn, const SpawnOptions& options,
              bool failFast) {
  if (worldSize < 1) {
    throw std::invalid_argument(fmt::format("spawn: worldSize must be >= 1, got {}", worldSize));
  }
  if (options.timeout.count() <= 0) {
    throw std::invalid_argument(fmt::format("spawn: SpawnOptions::timeout must be positive, got "
                                            "{} ms", options.timeout.count()));
  }
  return mode == SpawnMode::kThreads ? runThreads(worldSize, fn, options)
                                     : runProcesses(worldSize, fn, options, failFast);
}

}  // namespace

std::string spawnModeName(SpawnMode mode) {
  return mode == SpawnMode::kThreads ? "Threads" : "Processes";
}

void RankContext::killSelf() const {
  if (mode == SpawnMode::kThreads) throw RankKilled{};
  std::cout.flush();
  std::fflush(nullptr);
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // unreachable: SIGKILL cannot be caught
}

void spawnRanks(SpawnMode mode, int worldSize, const RankFn& fn, const SpawnOptions& options) {
  Collected c = run(mode, worldSize, fn, options, /*failFast=*/true);
  if (c.firstFailure < 0) return;
  const RankOutcome& first = c.outcomes[static_cast<size_t>(c.firstFailure)];
  std::vector<std::string> others;
  for (const auto& o : c.outcomes) {
    if (o.rank != first.rank && isFailure(o, options)) {
      others.push_back(fmt::format("rank {}: {}", o.rank, o.error));
    }
  }
  throw SpawnError(first.rank,
                   fmt::format("spawnRanks({}): rank {} failed: {}{}", spawnModeName(mode), first.rank,
                               first.error,
                               others.empty() ? "" : fmt::format(" (then: {})",
                                                                 fmt::join(others, "; "))));
}

std::vector<RankOutcome> spawnRanksCollect(SpawnMode mode, int worldSize, const RankFn& fn,
                                           const SpawnOptions& options) {
  return run(mode, worldSize, fn, options, /*failFast=*/false).outcomes;
}

}  // namespace distlab::ranks
