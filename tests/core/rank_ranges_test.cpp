// foldRankRuns (runtime/core/rank_ranges.hpp): runs of four or more
// consecutive ranks fold, shorter ones stay listed.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/core/rank_ranges.hpp"

namespace distlab {
namespace {

TEST(RankRanges, RunsOfFourOrMoreFold) {
  EXPECT_EQ(foldRankRuns({}), "");
  EXPECT_EQ(foldRankRuns({7}), "7");
  EXPECT_EQ(foldRankRuns({0, 1, 2}), "0,1,2");      // three: listed
  EXPECT_EQ(foldRankRuns({0, 1, 2, 3, 5}), "0-3,5");  // four: folded
  EXPECT_EQ(foldRankRuns({1, 3, 5}, ", "), "1, 3, 5");
  std::vector<int> all;
  for (int r = 0; r < 1024; ++r) {
    if (r != 777) all.push_back(r);
  }
  EXPECT_EQ(foldRankRuns(all), "0-776,778-1023");
  EXPECT_EQ(foldRankRuns({5, 6, 7, 8, 0}, ", "), "5-8, 0");  // unsorted: runs where they are
}

}  // namespace
}  // namespace distlab
