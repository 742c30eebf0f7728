// monitoredBarrier on shm (any backend: it runs through the store): the
// reference texts on rank 0 and on the others, dead vs alive-but-late, and
// waitAllRanks. Three ranks in processes, 1 s timeout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <thread>

#include "runtime/comm/debug/monitored_barrier.hpp"
#include "tests/debug/debug_test_util.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kWorld = 3;

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
    markEvent(ctx, "caught");  // a late rank waits for this instead of sleeping
  }, so);
}

TEST(MonitoredBarrier, PassesWhenEveryRankArrivesRepeatedly) {
  runRanks([](RankContext& ctx, comm::ProcessGroupPtr& pg) {
    // Each rank marks its arrival at barrier i before entering it; a barrier
    // that lets a rank through early would show a missing mark.
    auto arrivedAll = [&](int i) {
      std::vector<std::string> keys;
      for (int r = 0; r < kWorld; ++r) keys.push_back(fmt::format("arrived/{}/{}", i, r));
      return ctx.store->check(keys);
    };
    for (int i = 0; i < 6; ++i) {
      ctx.store->setString(fmt::format("arrived/{}/{}", i, ctx.rank), "1");
      if (i < 5) {
        EXPECT_NO_THROW(comm::monitoredBarrier(pg, kTimeout)) << "barrier " << i;
      } else {  // the default group, waiting for all ranks
        EXPECT_NO_THROW(comm::monitoredBarrier(nullptr, kTimeout, /*waitAllRanks=*/true));
      }
      EXPECT_TRUE(arrivedAll(i)) << "rank " << ctx.rank << " passed barrier " << i
                                 << " before every rank arrived";
    }
  });
}

TEST(MonitoredBarrier, LateRankIsNamedAliveOnRankZeroAndReportedToTheOthers) {
  runRanks([](RankContext& ctx, comm::ProcessGroupPtr& pg) {
    if (ctx.rank == 1) {  // does not call into the barrier; alive until the others failed
      waitForEvent(ctx, "caught", {0, 2});
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
    if (ctx.rank != 0) {  // late: alive until rank 0 has failed
      waitForEvent(ctx, "caught", {0});
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
