// Note [A peer's timeout is a timeout] (runtime/comm/backend.hpp): when one
// rank's watchdog times out a collective and aborts the group, a peer waiting
// in the same collective fails at once with DistTimeoutError quoting that
// watchdog message — never with a peer-failure or backend error, whichever
// rank's deadline comes first. Rank 0 has a 500 ms timeout, rank 1 a 20 s
// one, rank 2 never joins the second collective: rank 1 must report rank 0's
// timeout long before its own deadline, with the timeout's class, even though
// rank 0's process ends as soon as its own wait() returns (the watchdog
// announces the timeout to peers before it fails the Work).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/debug/debug_test_util.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::testing {
namespace {

using ::testing::HasSubstr;

constexpr std::chrono::milliseconds kShortTimeout{500};
constexpr std::chrono::milliseconds kLongTimeout{20000};

comm::ProcessGroupPtr initRank(RankContext& ctx, const std::string& backend,
                               const std::string& dumpDir) {
  comm::setFlightRecorderDumpPrefix(dumpDir + "/fr_rank_");
  comm::setErrorHandlingMode(comm::ErrorHandlingMode::kCleanUpOnly);
  comm::InitOptions o;
  o.backend = backend;
  o.store = ctx.store;
  o.rank = ctx.rank;
  o.worldSize = ctx.worldSize;
  o.timeout = ctx.rank == 0 ? kShortTimeout : kLongTimeout;
  return comm::initProcessGroup(o);
}

class PeerTimeout : public ::testing::TestWithParam<std::string> {};

TEST_P(PeerTimeout, APeerWaitingInTheSameCollectiveReportsATimeout) {
  TempDir dumps;
  spawn(SpawnMode::kProcesses, 3, [&](RankContext& ctx) {
    auto pg = initRank(ctx, GetParam(), dumps.path());
    pg->allreduce(ones({4}))->wait();  // everyone is connected
    if (ctx.rank == 2) {
      // Never joins the second allreduce; stays alive until both others
      // have their verdict, so nobody sees it die.
      ctx.store->wait({"verdicts/0", "verdicts/1"}, std::chrono::seconds(30));
      return;
    }
    Caught c = catchFailure([&] { pg->allreduce(ones({4}))->wait(); });
    ctx.store->add("verdicts/" + std::to_string(ctx.rank), 1);
    ASSERT_TRUE(c.thrown) << "rank " << ctx.rank;
    EXPECT_TRUE(c.timeout) << "rank " << ctx.rank << " raised another class: " << c.what;
    EXPECT_THAT(c.what, HasSubstr("Watchdog caught collective operation timeout"));
    if (ctx.rank == 1) {
      EXPECT_THAT(c.what, HasSubstr("rank 0"));
      // Learnt from rank 0, not from its own 20 s deadline.
      EXPECT_LT(c.seconds, kShortTimeout.count() / 1000.0 + kDetectionSlackSeconds) << c.what;
    }
  }, SpawnOptions{.timeout = std::chrono::seconds(60)});
}

INSTANTIATE_TEST_SUITE_P(Backends, PeerTimeout, ::testing::Values("shm", "gloo"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace distlab::testing
