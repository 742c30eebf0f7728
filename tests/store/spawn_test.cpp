// The rank spawners themselves (tests/support/spawn.hpp): every rank runs,
// failures name their rank, deadlines name the ranks still running, killSelf.
#include "tests/support/spawn.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "runtime/core/errors.hpp"

namespace distlab::testing {
namespace {

using std::chrono::milliseconds;

class SpawnTest : public ::testing::TestWithParam<SpawnMode> {};

TEST_P(SpawnTest, EveryRankRunsWithItsRankAndSharedStore) {
  spawn(GetParam(), 4, [](RankContext& ctx) {
    ASSERT_EQ(ctx.worldSize, 4);
    ctx.store->setString("rank" + std::to_string(ctx.rank), std::to_string(ctx.rank * 10));
    for (int peer = 0; peer < ctx.worldSize; ++peer) {
      EXPECT_EQ(ctx.store->getString("rank" + std::to_string(peer)), std::to_string(peer * 10));
    }
  });
}

TEST_P(SpawnTest, FirstFailureIsReportedWithItsRank) {
  try {
    spawn(GetParam(), 3, [](RankContext& ctx) {
      if (ctx.rank == 2) throw ValueError("rank two broke");
    });
    FAIL() << "spawn must rethrow the failure";
  } catch (const SpawnError& e) {
    EXPECT_EQ(e.rank(), 2);
    EXPECT_NE(std::string(e.what()).find("rank 2 failed: rank two broke"), std::string::npos)
        << e.what();
  }
}

TEST_P(SpawnTest, KillSelfIsAllowedWhenListed) {
  auto outcomes = spawnCollect(GetParam(), 3, [](RankContext& ctx) {
    if (ctx.rank == 1) ctx.killSelf();
  }, SpawnOptions{.mayDie = {1}});
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_TRUE(outcomes[0].ok);
  EXPECT_FALSE(outcomes[1].ok);
  EXPECT_TRUE(outcomes[1].killed);
  EXPECT_TRUE(outcomes[2].ok);
  EXPECT_NO_THROW(spawn(GetParam(), 2, [](RankContext& ctx) {
    if (ctx.rank == 0) ctx.killSelf();
  }, SpawnOptions{.mayDie = {0}}));
}

TEST_P(SpawnTest, UnlistedKillIsAFailure) {
  EXPECT_THROW(spawn(GetParam(), 2, [](RankContext& ctx) {
    if (ctx.rank == 1) ctx.killSelf();
  }), SpawnError);
}

INSTANTIATE_TEST_SUITE_P(Modes, SpawnTest,
                         ::testing::Values(SpawnMode::kThreads, SpawnMode::kProcesses),
                         [](const auto& param_info) { return spawnModeName(param_info.param); });

TEST(SpawnProcessTest, DeadlineKillsAndNamesRanksStillRunning) {
  try {
    spawn(SpawnMode::kProcesses, 3, [](RankContext& ctx) {
      if (ctx.rank == 1) {
        while (true) ::pause();
      }
    }, SpawnOptions{.timeout = milliseconds(500)});
    FAIL() << "a hung rank must fail the spawn";
  } catch (const SpawnError& e) {
    EXPECT_EQ(e.rank(), -1);
    EXPECT_NE(std::string(e.what()).find("still running (now killed): [1]"), std::string::npos)
        << e.what();
  }
}

TEST(SpawnProcessTest, PeersOfAFailedRankAreStoppedAfterTheGrace) {
  try {
    spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
      if (ctx.rank == 0) throw DistError("boom");
      while (true) ::pause();
    }, SpawnOptions{.timeout = milliseconds(30000), .failFastGrace = milliseconds(100)});
    FAIL();
  } catch (const SpawnError& e) {
    EXPECT_EQ(e.rank(), 0);
    EXPECT_NE(std::string(e.what()).find("boom"), std::string::npos) << e.what();
  }
}

TEST(SpawnProcessTest, ProcessesAreSeparateAddressSpaces) {
  static int global = 0;
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    global += 1 + ctx.rank;
    EXPECT_EQ(global, 1 + ctx.rank);
    EXPECT_NE(::getpid(), 0);
  });
  EXPECT_EQ(global, 0);
}

}  // namespace
}  // namespace distlab::testing
