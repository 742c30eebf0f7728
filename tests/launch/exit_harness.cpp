#include "tests/launch/exit_harness.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "emulator/launcher/child_process.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::testing {
namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

constexpr const char* kMarkerVar = "DISTLAB_EXIT_TEST_MARKER";

int remainingMs(const Deadline& d) {
  auto left = std::chrono::duration_cast<milliseconds>(d.remaining()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

bool hasMarker(pid_t pid, const std::string& entry) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string var;
  while (std::getline(in, var, '\0')) {
    if (var == entry) return true;
  }
  return false;
}

std::string processName(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// The pid in "distlab_shm_<pid>_<random>", or -1.
pid_t segmentPid(const std::string& name) {
  const std::string prefix = "distlab_shm_";
  if (name.rfind(prefix, 0) != 0) return -1;
  return static_cast<pid_t>(std::atoi(name.c_str() + prefix.size()));
}

}  // namespace

NameMatch startsWith(const std::string& prefix) {
  return [prefix](const std::string& n) { return n.rfind(prefix, 0) == 0; };
}

NameMatch named(const std::string& name) {
  return [name](const std::string& n) { return n == name; };
}

KilledRun::KilledRun(std::vector<std::string> argv, std::vector<std::string> extraEnv) {
  static std::atomic<int> counter{0};
  marker_ = "exit-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  std::string pattern = (fs::temp_directory_path() / "distlab-exit-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  tmpDir_ = pattern;
  shmWatch_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  ::inotify_add_watch(shmWatch_, "/dev/shm", IN_CREATE | IN_DELETE);
  extraEnv.push_back(std::string(kMarkerVar) + "=" + marker_);
  extraEnv.push_back("TMPDIR=" + tmpDir_);
  emulator::ChildProcess p =
      emulator::startChild(emulator::ChildSpec{argv, emulator::environmentWith(extraEnv)});
  pid_ = p.pid;
  outFd_ = p.stdoutFd;
  errFd_ = p.stderrFd;
}

KilledRun::~KilledRun() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  for (pid_t p : markedPids()) ::kill(p, SIGKILL);
  for (int fd : {outFd_, errFd_, shmWatch_}) {
    if (fd >= 0) ::close(fd);
  }
  std::error_code ec;
  fs::remove_all(tmpDir_, ec);
}

void KilledRun::readOutput(int timeoutMs) {
  struct pollfd fds[2] = {{outFd_, POLLIN, 0}, {errFd_, POLLIN, 0}};
  if (::poll(fds, 2, timeoutMs) <= 0) return;
  for (auto& f : fds) {
    if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP))) continue;
    char buf[4096];
    ssize_t n = ::read(f.fd, buf, sizeof(buf));
    if (n > 0) output_.append(buf, static_cast<size_t>(n));
    if (n == 0) {
      ::close(f.fd);
      (f.fd == outFd_ ? outFd_ : errFd_) = -1;
    }
  }
}

std::string KilledRun::waitForEntry(const std::string& dir, const NameMatch& match,
                                    milliseconds limit) {
  Deadline deadline = Deadline::after(limit);
  int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  ::inotify_add_watch(fd, dir.c_str(), IN_CREATE | IN_MOVED_TO);
  std::string found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {  // already there
    if (match(e.path().filename().string())) found = e.path().string();
  }
  while (found.empty() && !deadline.expired()) {
    struct pollfd fds[3] = {{fd, POLLIN, 0}, {outFd_, POLLIN, 0}, {errFd_, POLLIN, 0}};
    if (::poll(fds, 3, remainingMs(deadline)) <= 0) continue;
    if (fds[1].revents || fds[2].revents) readOutput(0);  // never let the program block on us
    alignas(struct inotify_event) char buf[8192];
    ssize_t n = ::read(fd, buf, sizeof(buf));
    for (ssize_t off = 0; off < n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(struct inotify_event) + ev->len);
      if (ev->len > 0 && match(ev->name)) found = dir + "/" + ev->name;
    }
  }
  ::close(fd);
  return found;
}

bool KilledRun::waitForOutput(const std::string& text, milliseconds limit) {
  Deadline deadline = Deadline::after(limit);
  while (output_.find(text) == std::string::npos) {
    if (deadline.expired() || (outFd_ < 0 && errFd_ < 0)) return false;
    readOutput(remainingMs(deadline));
  }
  return true;
}

void KilledRun::noteSegments() {
  alignas(struct inotify_event) char buf[8192];
  ssize_t n;
  while ((n = ::read(shmWatch_, buf, sizeof(buf))) > 0) {
    for (ssize_t off = 0; off < n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(struct inotify_event) + ev->len);
      if (ev->len == 0) continue;
      std::string name = ev->name;
      pid_t creator = segmentPid(name);
      if (creator <= 0) continue;
      if ((ev->mask & IN_CREATE) &&
          (seenPids_.count(creator) || hasMarker(creator, std::string(kMarkerVar) + "=" + marker_))) {
        segments_.insert(name);
        seenPids_.insert(creator);
      }
      if ((ev->mask & IN_DELETE) && segments_.count(name)) unlinked_.insert(name);
    }
  }
}

bool KilledRun::waitForSegment(bool unlinked, milliseconds limit) {
  Deadline deadline = Deadline::after(limit);
  for (;;) {
    noteSegments();
    if (!segments_.empty() && (!unlinked || !unlinked_.empty())) return true;
    if (deadline.expired()) return false;
    struct pollfd fds[3] = {{shmWatch_, POLLIN, 0}, {outFd_, POLLIN, 0}, {errFd_, POLLIN, 0}};
    if (::poll(fds, 3, remainingMs(deadline)) > 0 && (fds[1].revents || fds[2].revents)) {
      readOutput(0);
    }
  }
}

int KilledRun::killAndReap(int signal) {
  noteSegments();  // the creators are alive now: attribute their segments
  markedPids();
  ::kill(pid_, signal);
  int status = 0;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  struct pollfd pfd = {pidfd, POLLIN, 0};
  ::poll(&pfd, 1, 10000);  // SIGKILL/SIGINT/SIGTERM all end it: bounded wait for the exit
  ::close(pidfd);
  if (::waitpid(pid_, &status, WNOHANG) != pid_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    status = -1;
  }
  reaped_ = true;
  return status;
}

std::vector<pid_t> KilledRun::markedPids() {
  std::vector<pid_t> pids;
  const std::string entry = std::string(kMarkerVar) + "=" + marker_;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::atoi(name.c_str()));
    if (pid == ::getpid() || !hasMarker(pid, entry)) continue;
    pids.push_back(pid);
    seenPids_.insert(pid);
  }
  return pids;
}

std::string KilledRun::survivors(milliseconds limit) {
  Deadline deadline = Deadline::after(limit);
  for (;;) {
    std::vector<pid_t> pids = markedPids();
    if (pids.empty()) return "";
    if (deadline.expired()) {
      std::ostringstream out;
      for (pid_t p : pids) out << "pid " << p << " (" << processName(p) << ") ";
      return out.str();
    }
    std::vector<struct pollfd> fds;
    for (pid_t p : pids) {
      int fd = static_cast<int>(::syscall(SYS_pidfd_open, p, 0));
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    }
    // Until one of them ends; rescan at least every 200 ms for new ones.
    ::poll(fds.data(), fds.size(), std::min(remainingMs(deadline), 200));
    for (auto& f : fds) ::close(f.fd);
  }
}

std::string KilledRun::leftoverFiles() const {
  std::string out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(tmpDir_, ec)) {
    out += e.path().string() + " ";
  }
  return out;
}

std::string KilledRun::leakedSegments() {
  noteSegments();
  std::string out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev/shm", ec)) {
    const std::string name = e.path().filename().string();
    if (segments_.count(name) || seenPids_.count(segmentPid(name))) out += name + " ";
  }
  return out;
}

}  // namespace distlab::testing
