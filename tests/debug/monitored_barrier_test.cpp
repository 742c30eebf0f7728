// monitoredBarrier on shm (any backend: it runs through the store): the
// reference texts on rank 0 and on the others, dead vs alive-but-late, and
// waitAllRanks. Three ranks in processes, 1 s timeout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "runtime/comm/debug/monitored_barrier.hpp"
#include "tests/debug/debug_test_util.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kWorld = 3;
constexpr auto kLate = kTimeout + std::chrono::milliseconds(1500);

void runRanks(const std::function<void(RankContext&, comm::ProcessGroupPtr&)>& body,
              std::set<int> mayDie = {}) {
  TempDir dumps;
  const std::string dir = dumps.path();
  SpawnOptions so;
  so.timeout = std::chrono::seconds(30);
  so.mayDie = std::move(mayDie);
  spawn(SpawnMode::kProcesses, kWorld, [&](RankContext& ctx) {
    auto pg = initDebugRank(ctx, DebugLevel::kOff, dir);
    body(ctx, pg);
  }, so);
}

TEST(MonitoredBarrier, PassesWhenEveryRankArrivesRepeatedly) {
  runRanks([](RankContext&, comm::ProcessGroupPtr& pg) {
    for (int i = 0; i < 5; ++i) comm::monitoredBarrier(pg, kTimeout);
    comm::monitoredBarrier(nullptr, kTimeout, /*waitAllRanks=*/true);  // default group
  });
}

TEST(MonitoredBarrier, LateRankIsNamedAliveOnRankZeroAndReportedToTheOthers) {
  runRanks([](RankContext& ctx, comm::ProcessGroupPtr& pg) {
    if (ctx.rank == 1) {  // does not call into the barrier
      std::this_thread::sleep_for(kLate);
      return;
    }
    Caught c = catchFailure([&] { comm::monitoredBarrier(pg, kTimeout); });
    expectDetectedInTime(c, "monitored barrier late rank, rank " + std::to_string(ctx.rank));
    EXPECT_TRUE(c.timeout) << c.what;
    if (ctx.rank == 0) {
      EXPECT_THAT(c.what, HasSubstr("[Rank 0]: Rank 1 failed to pass monitoredBarrier in 1000 ms"));
      EXPECT_THAT(c.what, HasSubstr("rank 1: alive (pid "));
    } else {
      EXPECT_THAT(c.what, HasSubstr("Rank 2 successfully reached monitoredBarrier, but received "
                                    "errors while waiting for send/recv from rank 0. Please check "
                                    "rank 0 logs for faulty rank."));
      EXPECT_THAT(c.what, HasSubstr("Rank 0 reported: [Rank 0]: Rank 1 failed to pass "
                                    "monitoredBarrier in 1000 ms"));
    }
  });
}

TEST(MonitoredBarrier, WaitAllRanksListsEveryMissingRank) {
  runRanks([](RankContext& ctx, comm::ProcessGroupPtr& pg) {
    if (ctx.rank != 0) {
      std::this_thread::sleep_for(kLate);
      return;
    }
    Caught c = catchFailure([&] { comm::monitoredBarrier(pg, kTimeout, true); });
    expectDetectedInTime(c, "monitored barrier wait_all_ranks");
    EXPECT_GE(c.seconds, kTimeout.count() / 1000.0 - 0.05);
    EXPECT_THAT(c.what,
                HasSubstr("[Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 1000 ms"));
    EXPECT_THAT(c.what, HasSubstr("rank 1: alive"));
    EXPECT_THAT(c.what, HasSubstr("rank 2: alive"));
  });
}

TEST(MonitoredBarrier, DeadRankIsNamedDeadAtOnce) {
  runRanks(
      [](RankContext& ctx, comm::ProcessGroupPtr& pg) {
        if (ctx.rank == 1) ctx.killSelf();
        Caught c = catchFailure([&] { comm::monitoredBarrier(pg, kTimeout); });
        expectDetectedInTime(c, "monitored barrier dead rank, rank " + std::to_string(ctx.rank));
        EXPECT_TRUE(c.peerFailure) << c.what;
        EXPECT_LT(c.seconds, kTimeout.count() / 1000.0);
        EXPECT_THAT(c.what, HasSubstr("Rank 1 failed to pass monitoredBarrier in 1000 ms"));
        EXPECT_THAT(c.what, HasSubstr("rank 1: dead (pid "));
      },
      {1});
}

TEST(MonitoredBarrier, DeadRankZeroIsReportedByTheOthers) {
  runRanks(
      [](RankContext& ctx, comm::ProcessGroupPtr& pg) {
        if (ctx.rank == 0) ctx.killSelf();
        Caught c = catchFailure([&] { comm::monitoredBarrier(pg, kTimeout); });
        expectDetectedInTime(c, "monitored barrier dead rank 0, rank " + std::to_string(ctx.rank));
        EXPECT_TRUE(c.peerFailure) << c.what;
        EXPECT_THAT(c.what, HasSubstr("successfully reached monitoredBarrier"));
        EXPECT_THAT(c.what, HasSubstr("rank 0: dead (pid "));
      },
      {0});
}

TEST(MonitoredBarrier, NonMemberIsAValueError) {
  runRanks([](RankContext& ctx, comm::ProcessGroupPtr&) {
    auto sub = comm::newGroup({.ranks = {0, 1}});
    if (ctx.rank == 2) {
      EXPECT_THROW(comm::monitoredBarrier(sub, kTimeout), ValueError);
    } else {
      comm::monitoredBarrier(sub, kTimeout);
    }
  });
}

}  // namespace
}  // namespace distlab::testing
