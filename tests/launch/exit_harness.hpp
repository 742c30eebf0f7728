#pragma once
// KilledRun: starts a real program so that everything it leaves behind can be
// found exactly, waits for a chosen moment (an event, never a sleep), kills
// it, and reports what survived.
//
//   KilledRun run({DISTLAB_CLI, "run", file});
//   std::string dir = run.waitForEntry(run.tmpDir(), startsWith("distlab-scenario-"));
//   run.killAndReap(SIGKILL);
//   EXPECT_EQ(run.survivors(), "");       // no process carrying the marker
//   EXPECT_EQ(run.leftoverFiles(), "");   // the private TMPDIR is empty
//   EXPECT_EQ(run.leakedSegments(), "");  // no /dev/shm segment of the run
//
// Every process of the run (the program, its ranks, their children, the exit
// guard's watchdog) inherits DISTLAB_EXIT_TEST_MARKER=<unique> and
// TMPDIR=<a private folder>, so a scan of /proc/*/environ finds exactly this
// run's processes, and the private folder exactly its temp files. Segments:
// /dev/shm is watched (inotify) from the start; a distlab_shm_<pid>_* created
// by a process of the run is the run's.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace distlab::testing {

using NameMatch = std::function<bool(const std::string& name)>;
NameMatch startsWith(const std::string& prefix);
NameMatch named(const std::string& name);

class KilledRun {
 public:
  explicit KilledRun(std::vector<std::string> argv, std::vector<std::string> extraEnv = {});
  ~KilledRun();  // SIGKILLs and reaps whatever is left (a failed test), removes the folder
  KilledRun(const KilledRun&) = delete;
  KilledRun& operator=(const KilledRun&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& tmpDir() const { return tmpDir_; }

  // The waits are bounded generously (30 s): a loaded machine may be slow to
  // get there; a test on a quiet one takes well under a second per moment.
  // Waits (inotify) until `dir` holds an entry matching `match` (created,
  // renamed into place, or already there); returns its path, "" after `limit`.
  std::string waitForEntry(const std::string& dir, const NameMatch& match,
                           std::chrono::milliseconds limit = std::chrono::seconds(30));
  // Waits until the program's stdout or stderr has printed `text`; false
  // after `limit` or at EOF. The output so far is in output().
  bool waitForOutput(const std::string& text,
                     std::chrono::milliseconds limit = std::chrono::seconds(30));
  // Waits until a process of the run has created a shared-memory segment
  // (and, with `unlinked`, until it has been unlinked again).
  bool waitForSegment(bool unlinked, std::chrono::milliseconds limit = std::chrono::seconds(30));
  const std::string& output() const { return output_; }

  // Sends `signal` to the program (not its group) and reaps it (bounded);
  // returns its wait status.
  int killAndReap(int signal);
  // Waits (pidfds) until no process carries the marker, up to `limit`;
  // describes the survivors ("pid 123 (name)"), "" when none.
  std::string survivors(std::chrono::milliseconds limit = std::chrono::seconds(5));
  // Entries left in the private TMPDIR (recursively), "" when none.
  std::string leftoverFiles() const;
  // Segments created by the run that still exist, "" when none.
  std::string leakedSegments();

 private:
  std::vector<pid_t> markedPids();
  void noteSegments();
  void readOutput(int timeoutMs);

  std::string marker_;
  std::string tmpDir_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int outFd_ = -1;
  int errFd_ = -1;
  int shmWatch_ = -1;
  std::string output_;
  std::set<pid_t> seenPids_;
  std::set<std::string> segments_;    // created by the run
  std::set<std::string> unlinked_;    // of those, seen unlinked
};

}  // namespace distlab::testing
