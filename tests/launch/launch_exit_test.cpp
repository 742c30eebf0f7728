// Clean exits of the launcher: `distlab launch` and a program that starts its
// ranks with ranks::spawnRanks, killed by SIGINT, SIGTERM or SIGKILL at
// several moments, leave no process (ranks and the children they started
// included) and no segment; the Launcher's failure grace lets survivors report; a
// flight-recorder dump killed midway leaves no temporary file.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "emulator/launcher/launcher.hpp"
#include "runtime/core/errors.hpp"
#include "tests/launch/exit_harness.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::emulator {
namespace {

using std::chrono::milliseconds;
using testing::KilledRun;
using testing::named;
using testing::startsWith;

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGKILL};

std::string sigName(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGKILL"; }

// Two ranks that each start a grandchild (no death signal of its own), then
// do what `then` says (by default: write their pid file and wait).
std::vector<std::string> launchArgs(const std::string& pidDir, std::vector<std::string> flags,
                                    std::vector<std::string> then = {}) {
  std::vector<std::string> argv = {DISTLAB_CLI, "launch", "--nproc-per-node", "2",
                                   "--master-port", "0", "--stop-grace", "2"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const std::string& a : {std::string(DISTLAB_LAUNCH_HELPER), std::string("--grandchild"),
                               pidDir}) {
    argv.push_back(a);
  }
  if (then.empty()) then = {"--pidfile", pidDir};
  argv.insert(argv.end(), then.begin(), then.end());
  return argv;
}

void expectNothingLeft(KilledRun& run, const std::string& what) {
  EXPECT_EQ(run.survivors(), "") << what << "\n" << run.output();
  EXPECT_EQ(run.leftoverFiles(), "") << what;
  EXPECT_EQ(run.leakedSegments(), "") << what;
}

TEST(LaunchExitTest, KilledOnceRanksStartedLeavesNothing) {
  for (int sig : kSignals) {
    distlab::testing::TempDir pids;
    KilledRun run(launchArgs(pids.path(), {}));
    ASSERT_NE(run.waitForEntry(pids.path(), named("rank_0.pid")), "") << run.output();
    run.killAndReap(sig);
    expectNothingLeft(run, "killed by " + sigName(sig) + " once rank 0 was up");
  }
}

TEST(LaunchExitTest, KilledWhileGrandchildrenRunLeavesNothing) {
  for (int sig : kSignals) {
    distlab::testing::TempDir pids;
    KilledRun run(launchArgs(pids.path(), {}));
    ASSERT_NE(run.waitForEntry(pids.path(), named("grandchild_0.pid")), "") << run.output();
    ASSERT_NE(run.waitForEntry(pids.path(), named("grandchild_1.pid")), "") << run.output();
    run.killAndReap(sig);
    expectNothingLeft(run, "killed by " + sigName(sig) + " with grandchildren running");
  }
}

TEST(LaunchExitTest, KilledDuringFailureTeardownLeavesNothing) {
  for (int sig : kSignals) {
    distlab::testing::TempDir pids;
    // Rank 1 fails after starting its grandchild; rank 0 gets 30 s of grace:
    // the launcher is in its teardown when it is killed.
    KilledRun run(launchArgs(pids.path(), {"--failure-grace", "30"},
                             {"--exit-code-on-rank", "1:3"}));
    ASSERT_TRUE(run.waitForOutput("the other ranks get 30000 ms to finish")) << run.output();
    run.killAndReap(sig);
    expectNothingLeft(run, "killed by " + sigName(sig) + " during the failure grace");
  }
}

TEST(LaunchExitTest, LeftoverGrandchildrenAreKilledWhenTheRanksSucceed) {
  distlab::testing::TempDir pids;
  KilledRun run(launchArgs(pids.path(), {}, {"--print", "1"}));
  int status = run.killAndReap(0);  // signal 0: only wait for it to end on its own
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << run.output();
  expectNothingLeft(run, "after a successful run");
}

LaunchOptions graceOptions(const std::string& release, milliseconds grace) {
  LaunchOptions o;
  o.nprocPerNode = 3;
  o.masterPort = 0;
  o.stopGracePeriod = milliseconds(2000);
  o.failureGrace = grace;
  o.program = {DISTLAB_LAUNCH_HELPER, "--exit-code-on-rank", "1:3", "--wait-for-file", release};
  return o;
}

TEST(LaunchExitTest, FailureGraceLetsSurvivorsFinishOnTheirOwn) {
  distlab::testing::TempDir dir;
  const std::string release = dir.file("release");
  LaunchOptions o = graceOptions(release, milliseconds(20000));
  std::string out;
  o.onOutput = [&](int rank, bool, const std::string& line) {
    out += std::to_string(rank) + ":" + line + "\n";
  };
  // The survivors may end once the failure was seen: release them then.
  o.onMessage = [&](const std::string& text) {
    if (text.find("the other ranks get 20000 ms to finish") != std::string::npos) {
      std::ofstream(release) << "go";
    }
  };
  LaunchResult r = Launcher(o).run();
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.failedRank, 1);
  ASSERT_EQ(r.ranks.size(), 3u);
  for (int rank : {0, 2}) {
    const RankOutcome& s = r.ranks[static_cast<size_t>(rank)];
    EXPECT_TRUE(s.succeeded()) << rank << ": " << s.describe();
    EXPECT_FALSE(s.stoppedByLauncher) << rank;
    EXPECT_NE(out.find(std::to_string(rank) + ":rank " + std::to_string(rank) + " released"),
              std::string::npos) << out;
  }
}

TEST(LaunchExitTest, WithoutFailureGraceSurvivorsAreStoppedAtOnce) {
  distlab::testing::TempDir dir;
  LaunchOptions o = graceOptions(dir.file("never"), milliseconds(0));
  o.onOutput = [](int, bool, const std::string&) {};
  o.onMessage = [](const std::string&) {};
  LaunchResult r = Launcher(o).run();
  EXPECT_EQ(r.failedRank, 1);
  for (int rank : {0, 2}) EXPECT_TRUE(r.ranks[static_cast<size_t>(rank)].stoppedByLauncher);
}

TEST(LaunchExitTest, SurvivorsAreStoppedWhenTheFailureGraceEnds) {
  distlab::testing::TempDir dir;
  LaunchOptions o = graceOptions(dir.file("never"), milliseconds(300));
  o.onOutput = [](int, bool, const std::string&) {};
  std::string messages;
  o.onMessage = [&](const std::string& text) { messages += text + "\n"; };
  LaunchResult r = Launcher(o).run();
  EXPECT_EQ(r.exitCode, 1);
  const int64_t failedAt = r.ranks[1].endUs;
  for (int rank : {0, 2}) {
    const RankOutcome& s = r.ranks[static_cast<size_t>(rank)];
    EXPECT_TRUE(s.stoppedByLauncher) << rank;
    EXPECT_EQ(s.signal, SIGTERM) << s.describe();
    EXPECT_GE(s.endUs - failedAt, 300000) << "stopped before the grace ended";
  }
  EXPECT_NE(messages.find("--failure-grace passed"), std::string::npos) << messages;
}

TEST(LaunchExitTest, NegativeFailureGraceIsRejectedNamingTheFlag) {
  LaunchOptions o;
  o.program = {DISTLAB_LAUNCH_HELPER};
  o.failureGrace = milliseconds(-1);
  try {
    Launcher l(o);
    FAIL() << "accepted a negative failure grace";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("--failure-grace"), std::string::npos) << e.what();
  }
}

// Note [Dump files]: a dump killed midway leaves only complete dumps.
TEST(LaunchExitTest, KilledFlightRecorderDumpLeavesNoTemporaryFile) {
  for (int sig : kSignals) {
    for (const char* moment : {"dump 1\n", "dump 5\n"}) {
      KilledRun run({DISTLAB_FR_DUMP_HELPER});
      ASSERT_TRUE(run.waitForOutput(moment)) << run.output();
      run.killAndReap(sig);  // the next dump is being written now
      EXPECT_EQ(run.survivors(), "");
      std::string dump = run.tmpDir() + "/fr_rank_0.json";
      EXPECT_EQ(run.leftoverFiles(), dump + " ") << sigName(sig) << " after " << moment;
      std::ifstream in(dump);
      nlohmann::json parsed = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      EXPECT_FALSE(parsed.is_discarded()) << "the dump left is incomplete";
    }
  }
}

// ranks::spawnRanks (what the multi-rank tests use) killed mid-spawn: rank 0
// created the segment and waits for rank 1 to attach, rank 1 started a
// grandchild. The segment is still linked then (Note [shm segment
// lifecycle]); the exit guard unlinks it and kills both ranks and the
// grandchild, however the program ends.
TEST(LaunchExitTest, SpawnedRanksKilledWhileAttachingLeaveNothing) {
  for (int sig : kSignals) {
    KilledRun run({DISTLAB_SPAWN_EXIT_HELPER});
    ASSERT_TRUE(run.waitForSegment(false)) << run.output();
    ASSERT_TRUE(run.waitForOutput("grandchild started")) << run.output();
    run.killAndReap(sig);
    EXPECT_EQ(run.survivors(), "") << sigName(sig) << "\n" << run.output();
    EXPECT_EQ(run.leftoverFiles(), "") << sigName(sig);
    EXPECT_EQ(run.leakedSegments(), "") << sigName(sig);
  }
}

}  // namespace
}  // namespace distlab::emulator
