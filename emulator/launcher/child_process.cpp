#include "emulator/launcher/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include <fmt/format.h>

#include "runtime/core/errors.hpp"

extern char** environ;

namespace distlab::emulator {
namespace {

struct Pipe {
  int read = -1;
  int write = -1;
};

Pipe makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(fmt::format("launcher: pipe failed: {}", ::strerror(errno)));
  }
  return {fds[0], fds[1]};
}

// Runs in the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void childAfterFork(pid_t parent, const Pipe& out, const Pipe& err, int execErr,
                                 const Pipe& go, char* const* argv, char* const* envp,
                                 const char* workingDir) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  // Wait until the parent has registered us (ChildSpec::onForked): EOF means
  // it died first.
  ::close(go.write);
  char b = 0;
  ssize_t got;
  do {
    got = ::read(go.read, &b, 1);
  } while (got < 0 && errno == EINTR);
  if (got != 1) ::_exit(127);
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::dup2(out.write, STDOUT_FILENO);
  ::dup2(err.write, STDERR_FILENO);
  if (workingDir == nullptr || ::chdir(workingDir) == 0) ::execvpe(argv[0], argv, envp);
  int code = errno;
  ssize_t ignored = ::write(execErr, &code, sizeof(code));
  (void)ignored;
  ::_exit(127);
}

}  // namespace

std::vector<std::string> environmentWith(const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> vars;
  std::vector<std::string> order;
  auto put = [&](const std::string& entry) {
    auto eq = entry.find('=');
    std::string name = entry.substr(0, eq);
    if (!vars.count(name)) order.push_back(name);
    vars[name] = entry;
  };
  for (char** e = environ; e && *e; ++e) put(*e);
  for (const auto& entry : overrides) put(entry);
  std::vector<std::string> out;
  for (const auto& name : order) out.push_back(vars[name]);
  return out;
}

ChildProcess startChild(const ChildSpec& spec) {
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  Pipe out = makePipe();
  Pipe err = makePipe();
  Pipe execErr = makePipe();
  Pipe go = makePipe();
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    childAfterFork(parent, out, err, execErr.write, go, argv.data(), envp.data(),
                   spec.workingDir.empty() ? nullptr : spec.workingDir.c_str());
  }
  int forkErrno = errno;
  for (int fd : {out.write, err.write, execErr.write, go.read}) ::close(fd);
  if (pid < 0) {
    for (int fd : {out.read, err.read, execErr.read, go.write}) ::close(fd);
    throw Error(fmt::format("launcher: fork failed: {}", ::strerror(forkErrno)));
  }
  ::setpgid(pid, pid);  // also done by the child; whichever runs first wins
  if (spec.onForked) spec.onForked(pid);
  char b = 1;
  ssize_t sent = ::write(go.write, &b, 1);  // the child may exec now
  (void)sent;
  ::close(go.write);
  int code = 0;
  ssize_t n;
  do {
    n = ::read(execErr.read, &code, sizeof(code));
  } while (n < 0 && errno == EINTR);
  ::close(execErr.read);
  if (n == static_cast<ssize_t>(sizeof(code))) {
    ::waitpid(pid, nullptr, 0);
    ::close(out.read);
    ::close(err.read);
    if (!spec.workingDir.empty() && ::access(spec.workingDir.c_str(), X_OK) != 0) {
      throw Error(fmt::format("cannot enter the working directory '{}' to run '{}': {}",
                              spec.workingDir, spec.argv.front(), ::strerror(code)));
    }
    throw Error(fmt::format("cannot execute '{}': {}", spec.argv.front(), ::strerror(code)));
  }
  ::fcntl(out.read, F_SETFL, O_NONBLOCK);
  ::fcntl(err.read, F_SETFL, O_NONBLOCK);
  return {pid, out.read, err.read};
}

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return fmt::format("exit code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = ::sigabbrev_np(sig);
    return fmt::format("signal {} (SIG{})", sig, abbrev ? abbrev : "?");
  }
  return fmt::format("status {}", status);
}

}  // namespace distlab::emulator
