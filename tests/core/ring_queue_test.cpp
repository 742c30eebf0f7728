// RingQueue against std::deque as the model, over random push/pop sequences
// that wrap around and grow the ring.
#include "runtime/core/ring_queue.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <deque>
#include <memory>
#include <vector>

namespace distlab {
namespace {

RC_GTEST_PROP(RingQueueProperty, BehavesAsAFifo, (const std::vector<int>& ops)) {
  // An op >= 0 pushes it; a negative one pops (when not empty).
  RingQueue<int> ring;
  std::deque<int> model;
  for (int op : ops) {
    if (op >= 0) {
      ring.emplace_back() = op;
      model.push_back(op);
    } else if (!model.empty()) {
      RC_ASSERT(ring.front() == model.front());
      ring.pop_front();
      model.pop_front();
    }
    RC_ASSERT(ring.size() == model.size());
    RC_ASSERT(ring.empty() == model.empty());
    for (size_t i = 0; i < model.size(); ++i) RC_ASSERT(ring[i] == model[i]);
  }
}

TEST(RingQueueTest, PoppingReleasesTheElement) {
  auto value = std::make_shared<int>(1);
  RingQueue<std::shared_ptr<int>> ring;
  ring.emplace_back() = value;
  EXPECT_EQ(value.use_count(), 2);
  ring.pop_front();
  EXPECT_EQ(value.use_count(), 1);  // the freed slot keeps nothing
}

TEST(RingQueueTest, KeepsOrderAcrossGrowthAfterWrapping) {
  RingQueue<int> ring;
  for (int i = 0; i < 6; ++i) ring.emplace_back() = i;
  for (int i = 0; i < 5; ++i, ring.pop_front()) EXPECT_EQ(ring.front(), i);  // head near the end
  for (int i = 6; i < 30; ++i) ring.emplace_back() = i;  // wraps, then grows twice
  for (int i = 5; i < 30; ++i, ring.pop_front()) EXPECT_EQ(ring.front(), i);
  EXPECT_TRUE(ring.empty());
}

TEST(RingQueueTest, MovingLeavesTheSourceEmpty) {
  RingQueue<int> ring;
  ring.emplace_back() = 7;
  RingQueue<int> moved(std::move(ring));
  EXPECT_TRUE(ring.empty());  // NOLINT(bugprone-use-after-move): documented state
  EXPECT_EQ(moved.front(), 7);
  ring.emplace_back() = 8;  // usable again
  EXPECT_EQ(ring.front(), 8);
}

}  // namespace
}  // namespace distlab
