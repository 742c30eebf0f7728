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

TEST(Clock, MonotonicNeverGoesBack) {
  int64_t a = monotonicNowNs();
  int64_t b = monotonicNowNs();
  EXPECT_LE(a, b);
  Stopwatch watch;
  EXPECT_GE(watch.elapsedSeconds(), 0.0);
}

}  // namespace
}  // namespace distlab
