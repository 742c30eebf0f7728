#pragma once
// Starting child processes the launcher way (Note [Rank process lifetime]).
//
// Note [Rank process lifetime]: every child gets its own process group (so a
// signal to -pid reaches whatever the rank itself started), and
// PR_SET_PDEATHSIG=SIGKILL, so no rank outlives the launcher even when the
// launcher is SIGKILLed. The death signal fires when the *thread* that forked
// exits, so the caller must stay alive (it does: Launcher::run forks and reaps
// on its own thread). The child re-checks getppid() after prctl to close the
// race with a parent that died before the prctl. Signal dispositions and the
// signal mask are reset before exec (an ignored SIGPIPE would otherwise be
// inherited). Between fork and exec the child only makes async-signal-safe
// calls, as the launcher is multi-threaded.
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace distlab::emulator {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::vector<std::string> env;   // "NAME=value", the complete environment
  std::string workingDir;         // the child's; empty: the parent's
  // Runs in the parent after fork and before the child may exec (the child
  // waits for it): register the child's process group with the ExitGuard
  // here, so not even a launcher killed right after the fork leaks anything
  // the child starts. Must not throw.
  std::function<void(pid_t pid)> onForked;
};

struct ChildProcess {
  pid_t pid = -1;
  int stdoutFd = -1;  // read ends, non-blocking, close-on-exec; the caller closes them
  int stderrFd = -1;
};

// Forks and execs. Throws Error naming the program when it cannot be
// executed (not found, not executable), after reaping the failed child.
ChildProcess startChild(const ChildSpec& spec);

// The current environment with `overrides` ("NAME=value") replacing or
// adding variables.
std::vector<std::string> environmentWith(const std::vector<std::string>& overrides);

// "exit code 3", "signal 9 (SIGKILL)" for a waitpid status.
std::string describeStatus(int status);

}  // namespace distlab::emulator
