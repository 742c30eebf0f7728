// The ExitGuard watchdog (Note [Exit guard]). Everything here runs in a
// child forked from a possibly multi-threaded process, so it only makes raw
// system calls and keeps its state in static storage: no malloc, no locks,
// no stdio.
#include "emulator/launcher/exit_watchdog.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>

namespace distlab::emulator::detail {
namespace {

constexpr int kMaxGroups = 1024;
constexpr int kMaxPids = 8192;
constexpr int kMaxPaths = 64;
constexpr int kPathBytes = 4096;
constexpr int kReapWaitMs = 3000;

struct Tables {
  pid_t groups[kMaxGroups];
  int groupCount;
  pid_t pids[kMaxPids];  // registered pids, then members found in the groups
  int pidCount;
  char paths[kMaxPaths][kPathBytes];
  bool pathUsed[kMaxPaths];
  char input[1 << 16];
  size_t inputUsed;
};

Tables g;

bool contains(const pid_t* list, int count, pid_t v) {
  for (int i = 0; i < count; ++i) {
    if (list[i] == v) return true;
  }
  return false;
}

void addPid(pid_t* list, int& count, int capacity, pid_t v) {
  if (v > 0 && !contains(list, count, v) && count < capacity) list[count++] = v;
}

void removePid(pid_t* list, int& count, pid_t v) {
  for (int i = 0; i < count; ++i) {
    if (list[i] == v) list[i] = list[--count];
  }
}

pid_t parsePid(const char* s, size_t n) {
  pid_t v = 0;
  if (n == 0) return -1;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9' || v > 100000000) return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

void notePath(bool add, const char* p, size_t n) {
  if (n == 0 || n >= kPathBytes) return;
  for (int i = 0; i < kMaxPaths; ++i) {
    if (g.pathUsed[i] && std::strlen(g.paths[i]) == n && std::memcmp(g.paths[i], p, n) == 0) {
      if (!add) g.pathUsed[i] = false;
      return;
    }
  }
  if (!add) return;
  for (int i = 0; i < kMaxPaths; ++i) {
    if (g.pathUsed[i]) continue;
    std::memcpy(g.paths[i], p, n);
    g.paths[i][n] = '\0';
    g.pathUsed[i] = true;
    return;
  }
}

// One record (without its newline); returns true for the exit request.
bool handleRecord(const char* r, size_t n) {
  if (n < 2) return false;
  bool add = r[0] == '+';
  const char* payload = r + 2;
  size_t len = n - 2;
  switch (r[1]) {
    case 'G':
      add ? addPid(g.groups, g.groupCount, kMaxGroups, parsePid(payload, len))
          : removePid(g.groups, g.groupCount, parsePid(payload, len));
      return false;
    case 'P':
      add ? addPid(g.pids, g.pidCount, kMaxPids, parsePid(payload, len))
          : removePid(g.pids, g.pidCount, parsePid(payload, len));
      return false;
    case 'D':
      notePath(add, payload, len);
      return false;
    case 'X':
      return true;
    default:
      return false;
  }
}

// Reads what the pipe holds; returns true for an exit request. `eof` is set
// when every writer has closed it.
bool readCommands(int fd, bool& eof) {
  bool exitNow = false;
  for (;;) {
    ssize_t n = ::read(fd, g.input + g.inputUsed, sizeof(g.input) - g.inputUsed);
    if (n == 0) eof = true;
    if (n <= 0) break;
    g.inputUsed += static_cast<size_t>(n);
    size_t start = 0;
    for (size_t i = 0; i < g.inputUsed; ++i) {
      if (g.input[i] != '\n') continue;
      exitNow = handleRecord(g.input + start, i - start) || exitNow;
      start = i + 1;
    }
    std::memmove(g.input, g.input + start, g.inputUsed - start);
    g.inputUsed -= start;
    if (g.inputUsed == sizeof(g.input)) g.inputUsed = 0;  // an over-long record: drop it
  }
  return exitNow;
}

// Calls fn(dirfd, name, type) for each entry of the open directory `fd`.
template <typename Fn>
void forEachEntry(int fd, Fn fn) {
  alignas(8) char buf[4096];
  for (;;) {
    long n = ::syscall(SYS_getdents64, fd, buf, sizeof(buf));
    if (n <= 0) return;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<struct dirent64*>(buf + off);
      off += d->d_reclen;
      if (std::strcmp(d->d_name, ".") == 0 || std::strcmp(d->d_name, "..") == 0) continue;
      fn(fd, d->d_name, d->d_type);
    }
  }
}

// Members of the registered groups that are not zombies; records them.
int liveMembers() {
  int fd = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  int live = 0;
  forEachEntry(fd, [&](int dir, const char* name, unsigned char) {
    pid_t pid = parsePid(name, std::strlen(name));
    if (pid <= 0) return;
    char path[64] = "";
    std::memcpy(path, name, std::strlen(name) + 1);
    std::strcat(path, "/stat");
    int sf = ::openat(dir, path, O_RDONLY | O_CLOEXEC);
    if (sf < 0) return;
    char stat[512];
    ssize_t n = ::read(sf, stat, sizeof(stat) - 1);
    ::close(sf);
    if (n <= 0) return;
    stat[n] = '\0';
    const char* p = std::strrchr(stat, ')');  // "pid (comm) S ppid pgrp ..."
    if (p == nullptr || p[1] == '\0' || p[2] == '\0') return;
    char state = p[2];
    const char* f = p + 3;
    while (*f == ' ') ++f;
    while (*f >= '0' && *f <= '9') ++f;  // ppid
    while (*f == ' ') ++f;
    const char* pg = f;
    while (*f >= '0' && *f <= '9') ++f;
    pid_t pgrp = parsePid(pg, static_cast<size_t>(f - pg));
    if (state == 'Z' || !contains(g.groups, g.groupCount, pgrp)) return;
    addPid(g.pids, g.pidCount, kMaxPids, pid);
    ++live;
  });
  ::close(fd);
  return live;
}

void killGroups() {
  for (int round = 0; round * 10 < kReapWaitMs; ++round) {
    int live = liveMembers();
    for (int i = 0; i < g.groupCount; ++i) ::kill(-g.groups[i], SIGKILL);
    if (live == 0) return;
    ::poll(nullptr, 0, 10);
  }
}

void sweepSegments() {
  int fd = ::open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  static const char kPrefix[] = "distlab_shm_";
  forEachEntry(fd, [&](int dir, const char* name, unsigned char) {
    if (std::strncmp(name, kPrefix, sizeof(kPrefix) - 1) != 0) return;
    const char* p = name + sizeof(kPrefix) - 1;
    const char* end = std::strchr(p, '_');
    if (end == nullptr) return;
    pid_t pid = parsePid(p, static_cast<size_t>(end - p));
    if (contains(g.pids, g.pidCount, pid) || contains(g.groups, g.groupCount, pid)) {
      ::unlinkat(dir, name, 0);
    }
  });
  ::close(fd);
}

void removeTree(int dirfd, const char* name, int depth) {
  if (::unlinkat(dirfd, name, 0) == 0 || (errno != EISDIR && errno != EPERM) || depth > 64) return;
  int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  for (int pass = 0; pass < 4; ++pass) {
    forEachEntry(fd, [&](int dir, const char* entry, unsigned char) {
      removeTree(dir, entry, depth + 1);
    });
    if (::unlinkat(dirfd, name, AT_REMOVEDIR) == 0) break;
    ::lseek(fd, 0, SEEK_SET);
  }
  ::close(fd);
}

[[noreturn]] void cleanUpAndExit() {
  killGroups();
  sweepSegments();
  for (int i = 0; i < kMaxPaths; ++i) {
    if (g.pathUsed[i]) removeTree(AT_FDCWD, g.paths[i], 0);
  }
  ::_exit(0);
}

void detachFromParent(int& commandFd) {
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2}) {
    ::signal(sig, SIG_IGN);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int command = ::fcntl(commandFd, F_DUPFD_CLOEXEC, 10);  // clear of 0..3 whatever it was
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  ::dup2(command, 3);
  commandFd = 3;
  ::syscall(SYS_close_range, 4U, ~0U, 0U);
  ::fcntl(commandFd, F_SETFL, O_NONBLOCK);
  ::fcntl(commandFd, F_SETFD, FD_CLOEXEC);
}

}  // namespace

void runExitWatchdog(pid_t parent, int commandFd) {
  detachFromParent(commandFd);
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, parent, 0));
  bool eof = false;
  for (;;) {
    if (::getppid() != parent) break;  // reparented: the parent has ended
    struct pollfd fds[2] = {{pidfd, POLLIN, 0}, {eof ? -1 : commandFd, POLLIN, 0}};
    // Without a pidfd (old kernel), poll getppid() every 100 ms.
    ::poll(fds, 2, pidfd < 0 ? 100 : -1);
    if (readCommands(commandFd, eof)) break;
    if (pidfd >= 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) break;
  }
  readCommands(commandFd, eof);  // what the parent wrote just before it ended
  cleanUpAndExit();
}

}  // namespace distlab::emulator::detail
