// `distlab launch` end to end: prefixed output, flag errors that name the
// flag, SIGTERM forwarding, and no rank outliving a SIGKILLed launcher.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "emulator/launcher/child_process.hpp"
#include "emulator/launcher/output_pump.hpp"
#include "runtime/core/clock.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::emulator {
namespace {

using std::chrono::milliseconds;

struct Ran {
  int status = -1;
  std::string out, err;
};

// Runs `distlab launch ARGS...` to completion (bounded by `limit`).
Ran runLaunch(std::vector<std::string> args, milliseconds limit = milliseconds(20000)) {
  std::vector<std::string> argv = {DISTLAB_CLI, "launch"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess p = startChild(ChildSpec{argv, environmentWith({})});
  Ran ran;
  OutputPump pump([&](int, bool isStderr, const std::string& line) {
    (isStderr ? ran.err : ran.out) += line + "\n";
  });
  pump.addRank(0, p.stdoutFd, p.stderrFd, "");
  pump.drain(limit);
  Deadline deadline = Deadline::after(milliseconds(2000));
  while (::waitpid(p.pid, &ran.status, WNOHANG) == 0) {
    if (deadline.expired()) {
      ::kill(-p.pid, SIGKILL);
      ::waitpid(p.pid, &ran.status, 0);
      ADD_FAILURE() << "distlab launch did not finish in time";
      break;
    }
    ::poll(nullptr, 0, 10);
  }
  return ran;
}

int exitCode(const Ran& r) { return WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1; }

TEST(LaunchCliTest, PrefixesEveryLineWithItsRank) {
  Ran r = runLaunch({"--nproc-per-node", "2", "--master-port", "0", DISTLAB_LAUNCH_HELPER,
                     "--print", "2"});
  ASSERT_EQ(exitCode(r), 0) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    std::string p = "[rank " + std::to_string(rank) + "]:";
    EXPECT_NE(r.out.find(p + "line 0 from rank " + std::to_string(rank) + "\n"),
              std::string::npos) << r.out;
    EXPECT_NE(r.out.find(p + "line 1 from rank " + std::to_string(rank) + "\n"),
              std::string::npos) << r.out;
    EXPECT_NE(r.err.find(p + "stderr line from rank " + std::to_string(rank) + "\n"),
              std::string::npos) << r.err;
  }
}

TEST(LaunchCliTest, ProgramAfterDoubleDashGetsItsArguments) {
  Ran r = runLaunch({"--nproc-per-node", "2", "--master-port", "0", "--", DISTLAB_LAUNCH_HELPER,
                     "--print", "1"});
  ASSERT_EQ(exitCode(r), 0) << r.err;
  EXPECT_NE(r.out.find("[rank 0]:line 0 from rank 0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank 1]:line 0 from rank 1\n"), std::string::npos) << r.out;
}

TEST(LaunchCliTest, UnderscoreSpellingsAndTheSummaryTable) {
  Ran r = runLaunch({"--nproc_per_node=2", "--master_port=0", "--stop-grace", "2",
                     DISTLAB_LAUNCH_HELPER, "--exit-code-on-rank", "1:3"});
  EXPECT_EQ(exitCode(r), 1);
  EXPECT_NE(r.err.find("rank 1 failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exit code 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: rank 1 exits with code 3"), std::string::npos) << r.err;
}

TEST(LaunchCliTest, BadFlagsAreNamed) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  std::vector<Case> cases = {
      {{"--nproc-per-node", "0", "prog"}, "--nproc-per-node"},
      {{"--nproc-per-node", "two", "prog"}, "--nproc-per-node"},
      {{"--nnodes", "2", "--node-rank", "2", "prog"}, "--node-rank"},
      {{"--nnodes", "2", "--master-port", "0", "prog"}, "--master-port"},
      {{"--master-port", "99999", "prog"}, "--master-port"},
      {{"--max-restarts", "-1", "prog"}, "--max-restarts"},
      {{"--monitor-interval", "0", "prog"}, "--monitor-interval"},
      {{"--timeout", "-5", "prog"}, "--timeout"},
      {{"--run-id", "a/b", "prog"}, "--run-id"},
      {{"--master-port", "0"}, "program"},
      {{"--nproc-per-nod", "2", "prog"}, "launch: unknown flag '--nproc-per-nod'"},
      {{"--master-port", "0", "prog", "--"}, "launch: unexpected 'prog' before '--'"},
      {{"--master-port", "0", "--"}, "launch: no program after '--'"},
  };
  for (const auto& c : cases) {
    Ran r = runLaunch(c.args);
    EXPECT_EQ(exitCode(r), 2) << c.expected << ": " << r.err;  // every usage error
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.expected << ": " << r.err;
  }
  Ran missing = runLaunch({"--master-port", "0", "/nonexistent/prog"});
  EXPECT_EQ(exitCode(missing), 2);
  EXPECT_NE(missing.err.find("cannot execute '/nonexistent/prog'"), std::string::npos);
}

// Starts a launcher whose ranks write pid files and wait; returns the
// launcher's pid and the ranks' pids once all are up.
pid_t startBlockedJob(const testing::TempDir& dir, int nproc, std::vector<pid_t>* ranks) {
  ChildProcess p = startChild(ChildSpec{
      {DISTLAB_CLI, "launch", "--nproc-per-node", std::to_string(nproc), "--master-port", "0",
       "--stop-grace", "1", DISTLAB_LAUNCH_HELPER, "--pidfile", dir.path()},
      environmentWith({})});
  ::close(p.stdoutFd);
  ::close(p.stderrFd);
  Deadline deadline = Deadline::after(milliseconds(10000));
  for (int rank = 0; rank < nproc; ++rank) {
    std::string path = dir.file("rank_" + std::to_string(rank) + ".pid");
    pid_t pid = 0;
    while (!deadline.expired()) {
      std::ifstream in(path);
      if (in >> pid && pid > 0) break;
      ::poll(nullptr, 0, 10);
    }
    EXPECT_GT(pid, 0) << "rank " << rank << " never started";
    ranks->push_back(pid);
  }
  return p.pid;
}

// True when `pid` (reparented to this subreaper, or gone) has ended in time.
bool endsWithin(pid_t pid, milliseconds limit) {
  Deadline deadline = Deadline::after(limit);
  while (!deadline.expired()) {
    int status = 0;
    pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid || (got < 0 && errno == ECHILD && ::kill(pid, 0) != 0)) return true;
    ::poll(nullptr, 0, 10);
  }
  return false;
}

TEST(LaunchCliTest, NoRankOutlivesASigkilledLauncher) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);  // orphaned ranks come to us
  testing::TempDir dir;
  std::vector<pid_t> ranks;
  pid_t launcher = startBlockedJob(dir, 2, &ranks);
  ASSERT_EQ(ranks.size(), 2u);
  ::kill(launcher, SIGKILL);
  int status = 0;
  ::waitpid(launcher, &status, 0);
  for (pid_t pid : ranks) {
    EXPECT_TRUE(endsWithin(pid, milliseconds(5000))) << "rank pid " << pid << " survived";
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(LaunchCliTest, SigtermToTheLauncherReachesEveryRank) {
  testing::TempDir dir;
  std::vector<pid_t> ranks;
  pid_t launcher = startBlockedJob(dir, 2, &ranks);
  ASSERT_EQ(ranks.size(), 2u);
  ::kill(launcher, SIGTERM);
  ASSERT_TRUE(endsWithin(launcher, milliseconds(5000)));
  for (pid_t pid : ranks) EXPECT_NE(::kill(pid, 0), 0) << "rank pid " << pid << " survived";
}

}  // namespace
}  // namespace distlab::emulator
