#include "emulator/launcher/launcher.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "emulator/launcher/child_process.hpp"
#include "emulator/launcher/exit_guard.hpp"
#include "emulator/launcher/launch_attempt.hpp"
#include "runtime/comm/store/tcp_store.hpp"
#include "runtime/comm/store/tcp_store_server.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

void say(const LaunchOptions& o, const std::string& text) {
  if (o.onMessage) {
    o.onMessage(text);
  } else {
    std::fprintf(stderr, "[launcher] %s\n", text.c_str());
    std::fflush(stderr);
  }
}

int exitCodeFor(const detail::AttemptResult& a) {
  if (a.succeeded) return 0;
  if (a.interruptSignal != 0) return 128 + a.interruptSignal;
  if (a.timedOut) return 124;
  return 1;
}

}  // namespace

std::string RankOutcome::describe() const {
  if (!started) return "not started";
  if (succeeded()) return "ok";
  std::string what = describeStatus(status);
  return stoppedByLauncher ? "stopped: " + what : what;
}

Launcher::Launcher(LaunchOptions options) : options_(std::move(options)) {
  validateLaunchOptions(options_);
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw Error("launcher: cannot create its wake-up pipe");
  }
}

Launcher::~Launcher() {
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void Launcher::requestStop(int signal) noexcept {
  stopSignal_.store(signal);
  char b = 1;
  ssize_t ignored = ::write(wake_[1], &b, 1);
  (void)ignored;
}

LaunchResult Launcher::run() {
  LaunchResult result;
  ExitGuard::instance();  // before the store's threads exist (Note [Exit guard])
  std::unique_ptr<comm::TCPStoreServer> server;
  std::unique_ptr<comm::TCPStore> store;
  try {
    int port = options_.masterPort;
    if (options_.nodeRank == 0) {
      // Loopback unless other nodes must reach it (Note [Store bind address]).
      server = std::make_unique<comm::TCPStoreServer>(comm::TCPStoreServerOptions{
          .port = options_.masterPort,
          .bindAddress = comm::storeBindAddress(options_.masterAddr)});
      port = server->port();
    }
    result.masterPort = port;
    comm::TCPStoreOptions so;
    so.host = options_.nodeRank == 0 ? "127.0.0.1" : options_.masterAddr;
    so.port = port;
    so.timeout = options_.rendezvousTimeout;
    store = std::make_unique<comm::TCPStore>(so);
  } catch (const DistError& e) {
    result.exitCode = 2;
    result.error = fmt::format("--master-addr/--master-port {}:{}: {}", options_.masterAddr,
                               options_.masterPort, e.what());
    say(options_, result.error);
    return result;
  }
  for (int attempt = 0; attempt <= options_.maxRestarts; ++attempt) {
    result.attempts = attempt + 1;
    detail::AttemptResult a;
    try {
      a = detail::AttemptRunner(options_, *store, attempt, result.masterPort, wake_[0],
                                stopSignal_)
              .run();
    } catch (const Error& e) {
      result.exitCode = 2;
      result.error = e.what();
      say(options_, result.error);
      return result;
    }
    result.exitCode = exitCodeFor(a);
    result.timedOut = a.timedOut;
    result.interruptSignal = a.interruptSignal;
    result.failedRank = a.failedRank;
    result.remoteFailure = a.remoteFailure;
    result.leftoverProcesses = result.leftoverProcesses || a.leftoverProcesses;
    result.ranks = std::move(a.ranks);
    result.stackDump = std::move(a.stackDump);
    if (result.exitCode == 0 || a.timedOut || a.interruptSignal != 0) break;
    if (attempt < options_.maxRestarts) {
      say(options_, fmt::format("attempt {} failed; restarting the group ({} of {} restarts)",
                                attempt, attempt + 1, options_.maxRestarts));
    }
  }
  if (result.exitCode != 0) {
    result.summary = formatSummary(result, options_);
    say(options_, result.summary);
  }
  return result;
}

std::string formatSummary(const LaunchResult& r, const LaunchOptions& o) {
  std::string why = r.timedOut ? fmt::format("timed out after {} ms", o.timeout.count())
                    : r.interruptSignal ? fmt::format("interrupted by signal {}",
                                                      r.interruptSignal)
                    : r.remoteFailure ? std::string("another node failed")
                    : r.failedRank >= 0 ? fmt::format("rank {} failed", r.failedRank)
                                        : std::string("failed");
  std::string out = fmt::format("run '{}' {} (attempt {} of {})\n", o.runId, why, r.attempts,
                                o.maxRestarts + 1);
  bool blocked = r.timedOut;
  out += fmt::format("{:>5} {:>5} {:>8}  {:<32}{}{}\n", "rank", "local", "pid", "result",
                     blocked ? fmt::format("{:<32}", "blocked in") : "", "first error line");
  for (const auto& rank : r.ranks) {
    out += fmt::format("{:>5} {:>5} {:>8}  {:<32}{}{}\n", rank.rank, rank.localRank, rank.pid,
                       rank.describe(),
                       blocked ? fmt::format("{:<32}", rank.blockedIn.empty() ? "-"
                                                                             : rank.blockedIn)
                               : "",
                       rank.firstErrorLine);
  }
  return out;
}

}  // namespace distlab::emulator
