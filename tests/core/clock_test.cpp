#include <gtest/gtest.h>

#include <thread>

#include "runtime/core/clock.hpp"

namespace distlab {
namespace {

TEST(Clock, DeadlineExpiresAndClampsRemaining) {
  auto past = Deadline::after(Milliseconds(-5));
  EXPECT_TRUE(past.expired());
  EXPECT_EQ(past.remaining().count(), 0);
  auto future = Deadline::after(Milliseconds(60000));
  EXPECT_FALSE(future.expired());
  EXPECT_GT(future.remaining().count(), 50000);
}

// afterStart times from an earlier monotonicNowNs() reading, not from now.
TEST(Clock, DeadlineAfterStartCountsFromTheReading) {
  const int64_t now = monotonicNowNs();
  const int64_t twoMinutesAgo = now - int64_t{120} * 1'000'000'000;
  EXPECT_TRUE(Deadline::afterStart(twoMinutesAgo, Milliseconds(60000)).expired());
  const Deadline fromNow = Deadline::afterStart(now, Milliseconds(60000));
  EXPECT_FALSE(fromNow.expired());
  EXPECT_GT(fromNow.remaining().count(), 50000);
  EXPECT_LE(fromNow.remaining().count(), 60000);
}

TEST(Clock, MonotonicNeverGoesBack) {
  int64_t a = monotonicNowNs();
  int64_t b = monotonicNowNs();
  EXPECT_LE(a, b);
  Stopwatch watch;
  EXPECT_GE(watch.elapsedSeconds(), 0.0);
}

}  // namespace
}  // namespace distlab
