#include "emulator/launcher/stack_dump.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "emulator/launcher/child_process.hpp"
#include "emulator/launcher/output_pump.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::emulator {
namespace {

bool isPlumbing(const std::string& name, const std::string& frameLine) {
  static const char* const kNames[] = {
      "pause", "nanosleep", "clock_nanosleep", "sleep", "usleep", "poll", "ppoll", "select",
      "pselect", "epoll_wait", "epoll_pwait", "read", "write", "recv", "recvfrom", "recvmsg",
      "send", "sendto", "sendmsg", "accept", "accept4", "connect", "syscall", "raise", "abort",
      "waitpid", "wait4", "sched_yield", "futex_wait", "pthread_join", "pthread_cond_wait",
      "pthread_cond_timedwait", "pthread_cond_clockwait", "pthread_mutex_lock", "sem_wait",
      "sem_timedwait", "flock", "fcntl", "??"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  if (name.rfind("__", 0) == 0 || name.rfind("_dl_", 0) == 0 || name.rfind("std::", 0) == 0) {
    return true;
  }
  for (const char* lib : {"libc.so", "libpthread", "ld-linux", "libstdc++"}) {
    if (frameLine.find(lib) != std::string::npos) return true;
  }
  return false;
}

// "#1  0x... in ns::fn (a=1) at f.cpp:3" -> "ns::fn"; "#0  fn () at ..." -> "fn".
std::string frameFunction(const std::string& line) {
  size_t pos = line.find("  ");
  if (pos == std::string::npos) return "";
  std::string rest = line.substr(pos + 2);
  if (rest.rfind("0x", 0) == 0) {
    size_t in = rest.find(" in ");
    if (in == std::string::npos) return "";
    rest = rest.substr(in + 4);
  }
  size_t paren = rest.find(" (");
  return paren == std::string::npos ? rest : rest.substr(0, paren);
}

}  // namespace

std::vector<std::string> dumpStacks(const std::vector<pid_t>& pids,
                                    std::chrono::milliseconds limit) {
  Deadline deadline = Deadline::after(limit);
  std::vector<std::string> texts(pids.size());
  std::vector<pid_t> gdbs(pids.size(), -1);
  OutputPump pump([&](int index, bool, const std::string& line) {
    texts[static_cast<size_t>(index)] += line + "\n";
  });
  for (size_t i = 0; i < pids.size(); ++i) {
    ChildSpec spec;
    spec.argv = {"gdb", "-batch", "-nx", "-p", std::to_string(pids[i]), "-ex",
                 "thread apply all bt"};
    spec.env = environmentWith({"LC_ALL=C"});
    try {
      ChildProcess gdb = startChild(spec);
      gdbs[i] = gdb.pid;
      pump.addRank(static_cast<int>(i), gdb.stdoutFd, gdb.stderrFd, "");
    } catch (const std::exception& e) {
      texts[i] = fmt::format("(no stack dump for pid {}: {})\n", pids[i], e.what());
    }
  }
  pump.drain(deadline.remaining());
  for (size_t i = 0; i < pids.size(); ++i) {
    if (gdbs[i] < 0) continue;
    int status = 0;
    // gdb closes its output just before it exits: give it until the deadline.
    while (::waitpid(gdbs[i], &status, WNOHANG) == 0) {
      if (deadline.expired()) {
        ::kill(-gdbs[i], SIGKILL);
        ::waitpid(gdbs[i], &status, 0);
        texts[i] += fmt::format("(gdb did not finish within {} ms and was killed)\n",
                                limit.count());
        break;
      }
      ::poll(nullptr, 0, 5);
    }
  }
  return texts;
}

std::string blockedFunction(const std::string& gdbOutput, pid_t pid) {
  std::istringstream in(gdbOutput);
  std::string line;
  std::string lwp = fmt::format("(LWP {})", pid);
  std::vector<std::string> first, main;
  std::vector<std::string>* current = nullptr;
  while (std::getline(in, line)) {
    if (line.rfind("Thread ", 0) == 0) {
      current = line.find(lwp) != std::string::npos ? &main : (first.empty() ? &first : nullptr);
      continue;
    }
    if (current != nullptr && line.rfind("#", 0) == 0) current->push_back(line);
  }
  const std::vector<std::string>& frames = main.empty() ? first : main;
  for (const auto& frame : frames) {
    std::string name = frameFunction(frame);
    if (!name.empty() && !isPlumbing(name, frame)) return name;
  }
  return "";
}

}  // namespace distlab::emulator
