// InlineTask: what runs, where it lives (inline or heap), and that the held
// callable is destroyed exactly once whatever moves it went through.
#include "runtime/core/inline_task.hpp"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <utility>
#include <vector>

namespace distlab {
namespace {

using Task = InlineTask<48>;

// Counts its live copies through a shared_ptr's use count.
struct Small {
  std::shared_ptr<int> calls;
  void operator()() const { ++*calls; }
};
struct Large {
  std::shared_ptr<int> calls;
  std::array<char, 200> padding{};
  void operator()() const { ++*calls; }
};
// Copies when moved, and the copy may throw (a const list), like a closure
// holding a list of tensors.
struct CopiesOnMove {
  explicit CopiesOnMove(std::shared_ptr<int> c) : calls{std::move(c)} {}
  const std::vector<std::shared_ptr<int>> calls;
  void operator()() const { ++*calls.front(); }
};

TEST(InlineTaskTest, SmallCallablesLiveInlineAndOthersOnTheHeap) {
  static_assert(Task::kFitsInline<Small>);
  static_assert(!Task::kFitsInline<Large>);         // too big
  static_assert(!Task::kFitsInline<CopiesOnMove>);  // a move could throw
}

template <typename Fn>
void checkRunsAndDestroysOnce() {
  auto calls = std::make_shared<int>(0);
  {
    Task task(Fn{calls});
    EXPECT_TRUE(task);
    task();
    Task moved(std::move(task));
    EXPECT_FALSE(task);  // NOLINT(bugprone-use-after-move): moves leave it empty
    moved();
    Task assigned;
    assigned = std::move(moved);
    assigned();
    EXPECT_EQ(calls.use_count(), 2);  // this one and the task's
  }
  EXPECT_EQ(*calls, 3);
  EXPECT_EQ(calls.use_count(), 1);  // the task's copy destroyed, once
}

TEST(InlineTaskTest, RunsMovesAndDestroysInline) { checkRunsAndDestroysOnce<Small>(); }
TEST(InlineTaskTest, RunsMovesAndDestroysOnTheHeap) { checkRunsAndDestroysOnce<Large>(); }
TEST(InlineTaskTest, RunsMovesAndDestroysWhenMovesCopy) {
  checkRunsAndDestroysOnce<CopiesOnMove>();
}

TEST(InlineTaskTest, AssigningReleasesTheCallableHeldBefore) {
  auto first = std::make_shared<int>(0);
  auto second = std::make_shared<int>(0);
  Task task(Small{first});
  task = Task(Large{second});
  EXPECT_EQ(first.use_count(), 1);
  task();
  EXPECT_EQ(*second, 1);
  EXPECT_EQ(*first, 0);
}

TEST(InlineTaskTest, HoldsLambdasWithMoveOnlyCaptures) {
  auto value = std::make_unique<int>(41);
  int seen = 0;
  Task task([v = std::move(value), &seen] { seen = *v + 1; });
  Task other(std::move(task));
  other();
  EXPECT_EQ(seen, 42);
}

}  // namespace
}  // namespace distlab
