// Clean exits of the benchmarks that fork ranks (`distlab bench collectives`,
// ddp_step_bench, detail_overhead_bench): killed by SIGINT, SIGTERM or
// SIGKILL at several moments, they leave no rank process, no /dev/shm
// segment and no $TMPDIR/distlab_bench_* or ddp_bench_* folder
// (tests/launch/exit_harness.hpp).
#include <gtest/gtest.h>
#include <signal.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/launch/exit_harness.hpp"

namespace {

using distlab::testing::KilledRun;
using distlab::testing::startsWith;

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGKILL};

std::string sigName(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGKILL"; }

using Moment = std::function<bool(KilledRun&)>;

void killAt(const std::vector<std::string>& argv, const std::string& what, const Moment& moment) {
  for (int sig : kSignals) {
    KilledRun run(argv);
    ASSERT_TRUE(moment(run)) << what << ": the moment never came\n" << run.output();
    run.killAndReap(sig);
    std::string when = sigName(sig) + " " + what;
    EXPECT_EQ(run.survivors(), "") << when << "\n" << run.output();
    EXPECT_EQ(run.leftoverFiles(), "") << when;
    EXPECT_EQ(run.leakedSegments(), "") << when;
  }
}

Moment folderAppears(const std::string& prefix) {
  return [prefix](KilledRun& run) { return !run.waitForEntry(run.tmpDir(), startsWith(prefix)).empty(); };
}

Moment segment(bool unlinked) {
  return [unlinked](KilledRun& run) { return run.waitForSegment(unlinked); };
}

// Long enough (20,000 iterations per size) that forked ranks left running would
// still be there when the test looks.
const std::vector<std::string> kCollectives = {
    DISTLAB_CLI_PATH, "bench", "collectives", "--backend", "shm", "--world-size", "2",
    "--min-bytes", "8", "--max-bytes", "64K", "--iters", "20000", "--warmup", "2"};

TEST(BenchExit, CollectivesKilledOnceItsFolderExists) {
  killAt(kCollectives, "once distlab_bench_* exists", folderAppears("distlab_bench_"));
}

TEST(BenchExit, CollectivesKilledWhileRanksAttach) {
  killAt(kCollectives, "when the shm segment was created", segment(false));
}

TEST(BenchExit, CollectivesKilledWhileRanksRun) {
  killAt(kCollectives, "while the ranks run", segment(true));
}

const std::vector<std::string> kDdp = {DISTLAB_DDP_BENCH, "--worlds=2", "--caps=", "--rounds=1",
                                       "--torch_script="};

TEST(BenchExit, DdpStepKilledOnceItsFolderExists) {
  killAt(kDdp, "once ddp_bench_* exists", folderAppears("ddp_bench_"));
}

TEST(BenchExit, DdpStepKilledWhileRanksRun) {
  killAt(kDdp, "while the ranks train", segment(true));
}

TEST(BenchExit, DetailOverheadKilledWhileRanksAttachOrRun) {
  const std::vector<std::string> argv = {DISTLAB_DETAIL_BENCH, "--ranks", "2", "--rounds", "1"};
  killAt(argv, "when the shm segment was created", segment(false));
  killAt(argv, "while the ranks run", segment(true));
}

}  // namespace
