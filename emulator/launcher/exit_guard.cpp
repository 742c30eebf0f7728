#include "emulator/launcher/exit_guard.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "emulator/launcher/exit_watchdog.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {

ExitGuard& ExitGuard::instance() {
  static ExitGuard guard;
  return guard;
}

ExitGuard::ExitGuard() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(fmt::format("exit guard: pipe failed: {}", std::strerror(errno)));
  }
  owner_ = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[1]);
    detail::runExitWatchdog(owner_, fds[0]);
  }
  int forkErrno = errno;
  ::close(fds[0]);
  if (pid < 0) {
    ::close(fds[1]);
    throw Error(fmt::format("exit guard: fork failed: {}", std::strerror(forkErrno)));
  }
  watchdog_ = pid;
  pipe_ = fds[1];
}

ExitGuard::~ExitGuard() {
  if (::getpid() != owner_) return;  // a forked child leaving through exit()
  send('X', 'X', "");
  ::close(pipe_);
  for (int i = 0; i < 400; ++i) {  // the watchdog's own bound is 3 s
    pid_t r = ::waitpid(watchdog_, nullptr, WNOHANG);
    if (r != 0) return;  // reaped, or not our child any more
    ::poll(nullptr, 0, 10);
  }
}

void ExitGuard::send(char op, char kind, const std::string& payload) {
  std::string record = std::string{op, kind} + payload + "\n";
  if (record.size() > detail::kMaxGuardRecord) {
    throw ValueError(fmt::format("exit guard: '{}' is too long to register", payload));
  }
  ssize_t n;
  do {
    n = ::write(pipe_, record.data(), record.size());  // atomic: <= PIPE_BUF
  } while (n < 0 && errno == EINTR);
}

void ExitGuard::killGroupOnExit(pid_t pgid) { send('+', 'G', std::to_string(pgid)); }
void ExitGuard::forgetGroup(pid_t pgid) { send('-', 'G', std::to_string(pgid)); }
void ExitGuard::sweepSegmentsOnExit(pid_t pid) { send('+', 'P', std::to_string(pid)); }
void ExitGuard::forgetSegments(pid_t pid) { send('-', 'P', std::to_string(pid)); }

void ExitGuard::removeOnExit(const std::string& path) {
  if (path.empty() || path.front() != '/' || path.find('\n') != std::string::npos) {
    throw ValueError(fmt::format("exit guard: '{}' must be an absolute path without newlines",
                                 path));
  }
  send('+', 'D', path);
}

void ExitGuard::forgetPath(const std::string& path) { send('-', 'D', path); }

GuardedTempDir::GuardedTempDir(const std::string& prefix) {
  ExitGuard& guard = ExitGuard::instance();
  std::error_code ec;
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);  // honours TMPDIR
  if (ec) throw Error(fmt::format("no temporary folder (TMPDIR): {}", ec.message()));
  base = std::filesystem::absolute(base, ec);
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    // The pid and 32 random bits: registering a name before creating it
    // cannot name another process's folder (Note [Exit guard]).
    std::string candidate =
        (base / fmt::format("{}{}-{:08x}", prefix, ::getpid(), rd())).string();
    guard.removeOnExit(candidate);
    if (::mkdir(candidate.c_str(), 0700) == 0) {
      path_ = candidate;
      return;
    }
    int e = errno;
    guard.forgetPath(candidate);
    if (e != EEXIST) {
      throw Error(fmt::format("cannot create a temporary folder '{}': {}", candidate,
                              std::strerror(e)));
    }
  }
  throw Error(fmt::format("cannot create a temporary folder under '{}'", base.string()));
}

GuardedTempDir::~GuardedTempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  ExitGuard::instance().forgetPath(path_);
}

pid_t forkGuardedRank(pid_t& group) {
  ExitGuard& guard = ExitGuard::instance();
  int go[2];  // the child waits until it is registered; EOF: the parent died first
  if (::pipe2(go, O_CLOEXEC) != 0) throw Error(fmt::format("pipe failed: {}", std::strerror(errno)));
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(go[0]);
    ::close(go[1]);
    throw Error(fmt::format("fork failed: {}", std::strerror(e)));
  }
  if (pid == 0) {
    ::setpgid(0, group);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the parent died before the prctl
    ::close(go[1]);
    char b = 0;
    ssize_t got;
    do {
      got = ::read(go[0], &b, 1);
    } while (got < 0 && errno == EINTR);
    if (got != 1) ::_exit(1);
    ::close(go[0]);
    return 0;
  }
  ::close(go[0]);
  ::setpgid(pid, group == 0 ? pid : group);  // also done by the child; no race
  if (group == 0) {
    group = pid;
    guard.killGroupOnExit(group);
  }
  guard.sweepSegmentsOnExit(pid);
  char b = 1;
  ssize_t sent = ::write(go[1], &b, 1);
  (void)sent;
  ::close(go[1]);
  return pid;
}

void releaseGuardedRank(pid_t pid, pid_t group, bool lastOfGroup) {
  ExitGuard& guard = ExitGuard::instance();
  guard.forgetSegments(pid);
  if (!lastOfGroup) return;
  ::kill(-group, SIGKILL);  // whatever the ranks left behind
  guard.forgetGroup(group);
}

}  // namespace distlab::emulator
