// RankNames and parseCulpritRanks (Note [Naming ranks]): plain names where a
// group rank is its global rank, both numbers where they differ, and the
// culprit line read back as global ranks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/comm/debug/rank_names.hpp"

namespace distlab::comm {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(RankNames, IdentityMappingKeepsThePlainName) {
  RankNames world("w1_default", {}, 4);
  EXPECT_EQ(world.name(2), "rank 2");
  EXPECT_EQ(world.name(2, true), "Rank 2");
  EXPECT_EQ(world.names({1, 2}, true), "Ranks 1, 2");
  EXPECT_EQ(world.list({1, 2}), "1, 2");
  EXPECT_EQ(world.global(3), 3);
}

TEST(RankNames, SubgroupNamesBothWhereTheyDiffer) {
  RankNames g("g1", {1, 3});
  EXPECT_EQ(g.global(1), 3);
  EXPECT_EQ(g.name(1), "rank 1 of group 'g1' (global rank 3)");
  EXPECT_EQ(g.name(0, true), "Rank 0 of group 'g1' (global rank 1)");
  EXPECT_EQ(g.names({0, 1}), "ranks 0, 1 of group 'g1' (global ranks 1, 3)");
  RankNames h("g2", {0, 3});
  EXPECT_EQ(h.name(0), "rank 0");  // group rank 0 is global rank 0
  EXPECT_EQ(h.list({0, 1}), "0, 1 of group 'g2' (global ranks 0, 3)");
}

TEST(RankNames, CulpritLineParsesToGlobalRanks) {
  RankNames g("g1", {1, 2, 3});
  const std::string text = "...\nCulprit rank(s): " + g.list({2}) + " (the other ranks agree)";
  EXPECT_THAT(parseCulpritRanks(text), ElementsAre(3));
  EXPECT_THAT(parseCulpritRanks("x\nCulprit rank(s): " + g.list({0, 2}) + " (...)"),
              ElementsAre(1, 3));
  EXPECT_THAT(parseCulpritRanks("Culprit rank(s): 1, 2 (the other ranks of group 'w' agree)"),
              ElementsAre(1, 2));
  EXPECT_THAT(parseCulpritRanks("no culprit here"), IsEmpty());
  EXPECT_THAT(parseCulpritRanks("Culprit rank(s): none"), IsEmpty());
  // A monitored barrier's verdict, on the checking rank and as others quote it.
  EXPECT_THAT(parseCulpritRanks("[Rank 0]: Rank 2 failed to pass monitoredBarrier in 1500 ms"),
              ElementsAre(2));
  EXPECT_THAT(parseCulpritRanks("rank 1: [Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier "
                                "in 10 ms"),
              ElementsAre(1, 2));
  EXPECT_THAT(parseCulpritRanks("[Rank 0]: " + g.name(2, true) +
                                " failed to pass monitoredBarrier in 10 ms"),
              ElementsAre(3));
  // A mismatch with no majority (two ranks): both are named.
  EXPECT_THAT(parseCulpritRanks("Detected mismatch between collectives on ranks. " +
                                g.name(2, true) + " is running collective: A, but " +
                                g.name(0, true) + " is running collective: B. ..."),
              ElementsAre(1, 3));
  EXPECT_THAT(parseCulpritRanks("Detected mismatch between collectives on ranks. Rank 1 is "
                                "running collective: A, but Rank 0 is running collective: B"),
              ElementsAre(0, 1));
}

}  // namespace
}  // namespace distlab::comm
