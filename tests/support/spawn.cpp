#include "tests/support/spawn.hpp"

#include <gtest/gtest.h>

namespace distlab::testing {
namespace {

// Whether the test had failed already when this rank's fn started. rankCheck
// runs on the rank's own thread (see rank_spawner.hpp), so a thread_local is
// each rank's own.
thread_local bool tFailedBeforeRank = false;

// Wraps fn so that a GoogleTest failure recorded while it ran (in this rank's
// thread or process) fails the rank. HasFailure() is per test, not per thread:
// a rank reports only failures that appeared while it ran.
SpawnOptions withGtestCheck(const SpawnOptions& options, RankFn& wrapped, const RankFn& fn) {
  SpawnOptions o = options;
  auto userCheck = options.rankCheck;
  wrapped = [fn](RankContext& ctx) {
    tFailedBeforeRank = ::testing::Test::HasFailure();
    fn(ctx);
  };
  o.rankCheck = [userCheck]() -> std::string {
    if (!tFailedBeforeRank && ::testing::Test::HasFailure()) {
      return "GoogleTest assertion(s) failed in this rank (see the output above)";
    }
    return userCheck ? userCheck() : std::string();
  };
  return o;
}

}  // namespace

void spawn(SpawnMode mode, int worldSize, const RankFn& fn, const SpawnOptions& options) {
  RankFn wrapped;
  SpawnOptions o = withGtestCheck(options, wrapped, fn);
  ranks::spawnRanks(mode, worldSize, wrapped, o);
}

std::vector<RankOutcome> spawnCollect(SpawnMode mode, int worldSize, const RankFn& fn,
                                      const SpawnOptions& options) {
  RankFn wrapped;
  SpawnOptions o = withGtestCheck(options, wrapped, fn);
  return ranks::spawnRanksCollect(mode, worldSize, wrapped, o);
}

}  // namespace distlab::testing
