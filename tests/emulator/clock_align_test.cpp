// Clock alignment through the store (Note [Trace clock alignment]) between
// real processes: the measured offset is within its stated bound of the
// truth -- zero on one machine, or a deliberate shift of one rank's clock.
#include <gtest/gtest.h>

#include <cstdlib>

#include "emulator/trace/clock_align.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "tests/support/spawn.hpp"

namespace distlab::emulator {
namespace {

using testing::RankContext;
using testing::SpawnMode;

// The bound the tests accept: a store round trip on a loaded 2-core machine.
constexpr int64_t kMaxBoundNs = 50'000'000;  // 50 ms

void checkAlignment(int worldSize, int64_t shiftNs, const std::string& prefix) {
  testing::spawn(SpawnMode::kProcesses, worldSize, [=](RankContext& ctx) {
    ClockAlignOptions o;
    o.prefix = prefix;
    // Rank r's clock runs r * shift ahead of the real one.
    const int64_t skew = ctx.rank * shiftNs;
    o.clock = [skew] { return monotonicNowNs() + skew; };
    ClockAlignment a = alignClocks(*ctx.store, ctx.rank, ctx.worldSize, o);
    if (ctx.rank == 0) {
      EXPECT_EQ(a.offsetNs, 0);
      EXPECT_EQ(a.boundNs, 0);
      return;
    }
    EXPECT_GT(a.boundNs, 0);
    EXPECT_LE(a.boundNs, kMaxBoundNs);
    // The truth: adding -skew to this rank's clock gives rank 0's.
    EXPECT_LE(std::llabs(a.offsetNs + skew), a.boundNs)
        << "rank " << ctx.rank << " offset " << a.offsetNs << " bound " << a.boundNs;
  });
}

TEST(ClockAlign, SameMachineOffsetIsWithinBoundOfZero) { checkAlignment(4, 0, "align/zero"); }

TEST(ClockAlign, ShiftedClockIsRecovered) {
  checkAlignment(3, 5'000'000'000, "align/shift");  // 5 s per rank
}

TEST(ClockAlign, RejectsZeroRounds) {
  testing::spawn(SpawnMode::kThreads, 1, [](RankContext& ctx) {
    ClockAlignOptions o;
    o.rounds = 0;
    EXPECT_THROW(alignClocks(*ctx.store, 0, 1, o), ValueError);
  });
}

// Note [Aligning a thousand clocks]: small worlds keep 8 rounds and 10 s
// waits; wide ones take 2 rounds and a wait that covers the queue ahead.
TEST(ClockAlign, WideWorldsTakeFewerRoundsAndWaitForTheQueue) {
  EXPECT_EQ(clockAlignOptionsFor(16).rounds, 8);
  EXPECT_EQ(clockAlignOptionsFor(16).timeout, std::chrono::milliseconds(10000));
  EXPECT_EQ(clockAlignOptionsFor(32).rounds, 4);
  EXPECT_EQ(clockAlignOptionsFor(1024).rounds, 2);
  // 2,048 exchanges: 16 times 10 s.
  EXPECT_EQ(clockAlignOptionsFor(1024).timeout, std::chrono::milliseconds(160000));
}

}  // namespace
}  // namespace distlab::emulator
