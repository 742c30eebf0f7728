// Blocking operations that ran inline reach the watchdog already finished
// (Note [Watching a finished Work]): their flight-recorder entries must read
// exactly as for an asynchronous operation, and a failure must still trigger
// the watchdog's "error" dump. Two ranks in processes on shm.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/debug/debug_test_util.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::testing {
namespace {

using ::testing::HasSubstr;

TEST(WatchdogInline, FinishedBlockingOperationsAreRecordedLikeAsynchronousOnes) {
  TempDir dumps;
  const std::string dir = dumps.path();
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto pg = initDebugRank(ctx, DebugLevel::kOff, dir, std::chrono::seconds(20));
    pg->allreduce(ones({3, 4}), {.asyncOp = false})->wait();
    pg->allreduce(ones({5}), {.asyncOp = true})->wait();
    pg->barrier({.asyncOp = false})->wait();
    // The asynchronous entry is completed by its observer, which may run just
    // after wait() returned (Note [Work completion order] covers waiters of
    // the Work, not this dump): wait for it, bounded.
    const Deadline deadline = Deadline::after(std::chrono::seconds(5));
    nlohmann::json j;
    do {
      j = nlohmann::json::parse(comm::flightRecorderJson(ctx.rank));
    } while (j["entries"].size() == 3 && j["entries"][1]["state"] != "completed" &&
             !deadline.expired());
    ASSERT_EQ(j["entries"].size(), 3u);
    for (int i = 0; i < 3; ++i) {
      const auto& e = j["entries"][i];
      EXPECT_EQ(e["collective_seq_id"], i + 1);
      EXPECT_EQ(e["state"], "completed") << i;
      EXPECT_EQ(e["retired"], true) << i;
      EXPECT_FALSE(e["time_discovered_started_ns"].is_null()) << i;
      EXPECT_FALSE(e["time_discovered_completed_ns"].is_null()) << i;
      EXPECT_EQ(e["error"], "") << i;
    }
    EXPECT_EQ(j["entries"][0]["input_sizes"], nlohmann::json::parse("[[3, 4]]"));
    EXPECT_EQ(j["entries"][2]["profiling_name"], "shm:barrier");
    EXPECT_EQ(j["pg_status"]["w1_default"]["last_completed_collective"], 3);
    storeBarrier(ctx, "checked");
  });
}

TEST(WatchdogInline, AFailedBlockingOperationIsRecordedAndDumped) {
  TempDir dumps;
  const std::string dir = dumps.path();
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto pg = initDebugRank(ctx, DebugLevel::kOff, dir);
    // Different sizes on the two ranks: the shm descriptor check fails both.
    const Caught c = catchFailure(
        [&] { pg->allreduce(ones({ctx.rank == 0 ? 3 : 4}), {.asyncOp = false})->wait(); });
    ASSERT_TRUE(c.thrown);
    // The watchdog's error handling writes this rank's dump (trigger "error",
    // or "peer" when the other rank's request came first).
    ASSERT_TRUE(waitForDump(ctx, std::chrono::seconds(10)));
    const auto j = nlohmann::json::parse(comm::flightRecorderJson(ctx.rank));
    ASSERT_EQ(j["entries"].size(), 1u);
    const auto& e = j["entries"][0];
    EXPECT_EQ(e["state"], "failed");
    EXPECT_EQ(e["retired"], true);
    EXPECT_THAT(e["error"].get<std::string>(), HasSubstr(c.what.substr(0, 40)));
    EXPECT_EQ(j["pg_status"]["w1_default"]["last_completed_collective"], 0);
    storeBarrier(ctx, "checked");
  });
}

}  // namespace
}  // namespace distlab::testing
