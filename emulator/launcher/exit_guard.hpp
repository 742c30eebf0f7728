#pragma once
// ExitGuard: a watchdog process that releases what this process started or
// created, however this process ends: a normal exit, an exception, SIGINT,
// SIGTERM or SIGKILL (Note [Exit guard]).
//
//   ExitGuard& guard = ExitGuard::instance();      // starts the watchdog once
//   GuardedTempDir dir("distlab-scenario-");       // $TMPDIR/distlab-scenario-<pid>-<rand>
//   guard.killGroupOnExit(rankPid);                // the rank's process group
//   ...
//   guard.forgetGroup(rankPid);                    // after reaping it
//
// Note [Exit guard]: resources held by a process that can be SIGKILLed can
// only be released by another process. ExitGuard::instance() forks a small
// watchdog child once per process. It ignores SIGINT, SIGTERM, SIGHUP and
// SIGQUIT (a Ctrl-C reaches the terminal's whole process group), closes every
// descriptor it inherited but its command pipe (stdio goes to /dev/null, so a
// reader of our output sees EOF when we end), and waits for the parent to end
// (a pidfd). The parent registers each resource over the pipe right after
// creating it (or, for a folder, right before: GuardedTempDir) and forgets it
// once it released it itself. When the parent has ended, or asks it to
// (~ExitGuard at a normal exit), the watchdog
//   1. notes the members of every registered process group (/proc), SIGKILLs
//      the groups, and waits (bounded, 3 s) until no member is alive: ranks
//      and whatever they started, grandchildren included;
//   2. unlinks /dev/shm/distlab_shm_<pid>_* for those pids, the group ids and
//      the registered pids: a segment still linked because its creator died
//      while the peers attached (Note [shm segment lifecycle]);
//   3. removes every registered path, recursively, never following links;
// and exits. Between fork and _exit the watchdog makes raw system calls only
// (the parent may be multi-threaded) and keeps its tables in static storage.
// A pid is only ever killed as part of a registered group, so the only risk
// is a group whose members all ended without the parent forgetting it and
// whose id was reused meanwhile; the parent forgets a group when it reaps it.
// A process that leaves its group (setsid, setpgid) escapes the guard.
#include <sys/types.h>

#include <string>

namespace distlab::emulator {

class ExitGuard {
 public:
  // The process-wide guard; the first call forks the watchdog. Throws Error
  // when it cannot (no pipe, fork failed).
  static ExitGuard& instance();
  // Asks the watchdog to clean up what is still registered and waits for it
  // (bounded); a no-op in forked children (only the process that started it).
  ~ExitGuard();
  ExitGuard(const ExitGuard&) = delete;
  ExitGuard& operator=(const ExitGuard&) = delete;

  // Process group `pgid`: SIGKILLed (all members) if this process ends first.
  void killGroupOnExit(pid_t pgid);
  void forgetGroup(pid_t pgid);
  // Shared-memory segments /dev/shm/distlab_shm_<pid>_* of `pid` (a forked
  // rank that is not a group leader) are unlinked when this process ends.
  void sweepSegmentsOnExit(pid_t pid);
  void forgetSegments(pid_t pid);
  // `path` (a file or folder, removed recursively) when this process ends.
  // Throws ValueError for a relative path or one with a newline.
  void removeOnExit(const std::string& path);
  void forgetPath(const std::string& path);

  pid_t watchdogPid() const { return watchdog_; }

 private:
  ExitGuard();
  void send(char op, char kind, const std::string& payload);

  pid_t owner_ = -1;
  pid_t watchdog_ = -1;
  int pipe_ = -1;  // write end
};

// A fresh folder $TMPDIR/<prefix><pid>-<random> (TMPDIR unset: /tmp),
// registered with the ExitGuard before it exists, removed (recursively) and
// forgotten on destruction. Throws Error when it cannot be created.
class GuardedTempDir {
 public:
  explicit GuardedTempDir(const std::string& prefix);
  ~GuardedTempDir();
  GuardedTempDir(const GuardedTempDir&) = delete;
  GuardedTempDir& operator=(const GuardedTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// fork() for a rank of a program that forks its ranks (the benches): the
// child joins process group `group` (0: it starts one, and `group` is set to
// its pid), gets PR_SET_PDEATHSIG=SIGKILL, and the group and the child's
// segments are registered with the ExitGuard before the child returns from
// this call (it waits for the parent). Returns like fork(); throws
// Error when fork fails. Call ExitGuard::instance() before starting threads
// in the parent.
pid_t forkGuardedRank(pid_t& group);

// Called by a reaper of a forkGuardedRank child (after waitpid): forgets its
// segments; with `lastOfGroup`, SIGKILLs what is left of the group and
// forgets it.
void releaseGuardedRank(pid_t pid, pid_t group, bool lastOfGroup);

}  // namespace distlab::emulator
