// Clean exits of `distlab run`: killed by SIGINT, SIGTERM or SIGKILL before
// the ranks start, while they attach to their shared-memory segment, while
// they run and while they tear down, it leaves no process (ranks included),
// no /dev/shm segment and no $TMPDIR/distlab-scenario-* folder; a normal run
// leaves nothing either (tests/launch/exit_harness.hpp).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <functional>
#include <string>

#include "tests/launch/exit_harness.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using distlab::testing::KilledRun;
using distlab::testing::named;
using distlab::testing::startsWith;

// Two ranks on shm: 400 allreduces with 1 ms of compute each (about half a second).
const char* kScenario = R"(name = "exit"
description = "two ranks allreduce over shm for a while"
group = "test"
[cluster]
world_size = 2
backend = "shm"
[workload]
kind = "collectives"
[[workload.steps]]
op = "all_reduce"
numel = 4096
repeat = 400
compute_ms = 1
[expect]
outcome = "success"
)";

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGKILL};

std::string sigName(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGKILL"; }

// Starts `distlab run` on the scenario once per signal, waits for `moment`
// (false: it never came), kills, and checks that nothing is left.
void killAt(const std::string& what, const std::function<bool(KilledRun&)>& moment) {
  distlab::testing::TempDir dir;
  std::ofstream(dir.file("exit.toml")) << kScenario;
  for (int sig : kSignals) {
    KilledRun run({DISTLAB_CLI_PATH, "run", dir.file("exit.toml")});
    ASSERT_TRUE(moment(run)) << what << ": the moment never came\n" << run.output();
    run.killAndReap(sig);
    std::string when = sigName(sig) + " " + what;
    EXPECT_EQ(run.survivors(), "") << when << "\n" << run.output();
    EXPECT_EQ(run.leftoverFiles(), "") << when;
    EXPECT_EQ(run.leakedSegments(), "") << when;
  }
}

std::string scenarioDir(KilledRun& run) {
  return run.waitForEntry(run.tmpDir(), startsWith("distlab-scenario-"));
}

TEST(RunExit, KilledBeforeTheRanksStartLeavesNothing) {
  killAt("once the result folder exists", [](KilledRun& run) { return !scenarioDir(run).empty(); });
}

TEST(RunExit, KilledWhileRanksAttachLeavesNoSegment) {
  killAt("when the shm segment was created",
         [](KilledRun& run) { return run.waitForSegment(/*unlinked=*/false); });
}

TEST(RunExit, KilledWhileRanksRunLeavesNothing) {
  killAt("while the ranks run collectives",
         [](KilledRun& run) { return run.waitForSegment(/*unlinked=*/true); });
}

TEST(RunExit, KilledDuringTeardownLeavesNothing) {
  killAt("once rank 0 wrote its result", [](KilledRun& run) {
    std::string dir = scenarioDir(run);
    return !dir.empty() && !run.waitForEntry(dir, named("rank0.json")).empty();
  });
}

TEST(RunExit, ANormalRunLeavesNothing) {
  distlab::testing::TempDir dir;
  std::ofstream(dir.file("exit.toml")) << kScenario;
  KilledRun run({DISTLAB_CLI_PATH, "run", dir.file("exit.toml")});
  int status = run.killAndReap(0);  // signal 0: wait for it to end on its own
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << run.output();
  EXPECT_EQ(run.survivors(), "");
  EXPECT_EQ(run.leftoverFiles(), "");
  EXPECT_EQ(run.leakedSegments(), "");
}

}  // namespace
