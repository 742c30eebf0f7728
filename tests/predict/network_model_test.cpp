// The network model (emulator/link/topology.hpp, collective_cost.hpp) against
// answers worked out by hand from Note [Collective algorithms]'s formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "emulator/link/collective_cost.hpp"
#include "emulator/link/topology.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using comm::OpType;
using A = CollectiveAlgorithm;

// Two nodes of four ranks: inside 1 us / 100 GB/s, between 5 us / 10 GB/s.
Topology twoNodes() { return parseTopology("ranks_per_node=4,intra=1:100,inter=5:10"); }

// Every figure below is a sum of a few products of exact decimals; 1e-12
// relative is far above double rounding and far below any modelling term.
void expectSeconds(double actual, double expected) {
  EXPECT_NEAR(actual, expected, 1e-12 * std::max(1.0, expected)) << actual << " vs " << expected;
}

TEST(NetworkModel, RingAllreduceAcrossNodesRunsAtTheSlowerOfNvlinkAndTheNics) {
  const Topology t = twoNodes();
  const GroupShape g = shapeOfWorld(t, 8);
  EXPECT_EQ(g.nodes, 2);
  EXPECT_EQ(g.perNode, 4);
  // 2(n-1) = 14 steps of 5 us; 2(n-1)/n S = 1.75 x 8 MB at min(100, 4 x 10) GB/s.
  const CollectiveCost c = collectiveCost(t, OpType::kAllreduce, 8'000'000, g, A::kRing);
  expectSeconds(c.latencyS, 14 * 5e-6);
  expectSeconds(c.interS, 1.75 * 8e6 / 40e9);
  EXPECT_EQ(c.intraS, 0);
}

TEST(NetworkModel, HierarchicalAllreduceSplitsIntoIntraAndInterParts) {
  const Topology t = twoNodes();
  const GroupShape g = shapeOfWorld(t, 8);
  const CollectiveCost c = collectiveCost(t, OpType::kAllreduce, 8'000'000, g, A::kHierarchical);
  // Reduce-scatter and all-gather on 4 ranks: 2 x 3 steps of 1 us, 2 x 3/4 S at
  // 100 GB/s; all_reduce of S/4 on 2 nodes: 2 steps of 5 us, 2 x 1/2 x S/4 at 10 GB/s.
  expectSeconds(c.latencyS, 6e-6 + 10e-6);
  expectSeconds(c.intraS, 1.5 * 8e6 / 100e9);
  expectSeconds(c.interS, 2e6 / 10e9);
  // Auto takes the cheapest: hierarchical 336 us against ring 420 us and tree 430 us.
  const CollectiveCost best = collectiveCost(t, OpType::kAllreduce, 8'000'000, g);
  EXPECT_EQ(best.algorithm, A::kHierarchical);
  expectSeconds(best.seconds(), 336e-6);
  // Small messages, one rank per node: the tree's 2 log2(8) = 6 latencies win
  // over the ring's 14 (and there is no node to be hierarchical in).
  const Topology flat = parseTopology("ranks_per_node=1,intra=1:100,inter=5:10");
  EXPECT_EQ(collectiveCost(flat, OpType::kAllreduce, 8, shapeOfWorld(flat, 8)).algorithm,
            A::kTree);
}

TEST(NetworkModel, OneNodeUsesTheIntraLinkAndNoHierarchy) {
  const Topology t = twoNodes();
  const GroupShape g = shapeOfWorld(t, 4);
  const CollectiveCost ring = collectiveCost(t, OpType::kAllgatherBase, 4'000'000, g, A::kRing);
  expectSeconds(ring.latencyS, 3e-6);
  expectSeconds(ring.intraS, 0.75 * 4e6 / 100e9);
  EXPECT_THROW(collectiveCost(t, OpType::kAllreduce, 8, g, A::kHierarchical), ValueError);
  EXPECT_THROW(collectiveCost(t, OpType::kAlltoallBase, 8, g, A::kTree), ValueError);
  // What the emulator and the replay charge: the algorithm where it fits, else auto's.
  EXPECT_EQ(collectiveCostOrAuto(t, OpType::kAlltoallBase, 8, g, A::kTree).algorithm, A::kDirect);
  EXPECT_EQ(collectiveCostOrAuto(t, OpType::kAllreduce, 1 << 20, g, A::kTree).algorithm,
            A::kTree);
  EXPECT_THROW(collectiveCostOrAuto(t, OpType::kAllreduce, -8, g, A::kTree), ValueError);
}

TEST(NetworkModel, BroadcastTreeAgainstPipelinedRing) {
  const Topology t = parseTopology("ranks_per_node=1,intra=1:1,inter=10:1");
  const GroupShape g = shapeOfWorld(t, 16);  // 16 nodes, one rank each
  // Ring: 15 steps of 10 us + S / 1 GB/s; tree: log2(16) = 4 x (10 us + S / 1 GB/s).
  const CollectiveCost ring = collectiveCost(t, OpType::kBroadcast, 1'000'000, g, A::kRing);
  const CollectiveCost tree = collectiveCost(t, OpType::kBroadcast, 1'000'000, g, A::kTree);
  expectSeconds(ring.seconds(), 150e-6 + 1e-3);
  expectSeconds(tree.seconds(), 4 * (10e-6 + 1e-3));
  EXPECT_EQ(collectiveCost(t, OpType::kBroadcast, 1'000'000, g).algorithm, A::kRing);
  EXPECT_EQ(collectiveCost(t, OpType::kBroadcast, 8, g).algorithm, A::kTree);
}

TEST(NetworkModel, AllToAllChargesWhatLeavesTheNodeToTheNic) {
  const Topology t = twoNodes();
  const CollectiveCost c =
      collectiveCost(t, OpType::kAlltoallBase, 8'000'000, shapeOfWorld(t, 8));
  // 7 exchanges of 5 us; 3/8 of S stays inside (at 100 GB/s), 4/8 leaves at
  // 10 GB/s: the NIC is the bottleneck.
  EXPECT_EQ(c.algorithm, A::kDirect);
  expectSeconds(c.latencyS, 35e-6);
  expectSeconds(c.interS, 0.5 * 8e6 / 10e9);
}

TEST(NetworkModel, PointToPointUsesTheLinkBetweenThePair) {
  const Topology t = twoNodes();
  const GroupShape pair = shapeOf(t, {0, 5});
  expectSeconds(collectiveCost(t, OpType::kSend, 1'000'000, pair, A::kAuto, true).seconds(),
                5e-6 + 1e6 / 10e9);
  expectSeconds(collectiveCost(t, OpType::kSend, 1'000'000, pair, A::kAuto, false).seconds(),
                1e-6 + 1e6 / 100e9);
}

TEST(NetworkModel, OversubscriptionDividesTheInterNodeBandwidth) {
  const Topology t = parseTopology("ranks_per_node=1,intra=0:100,inter=0:10,oversubscription=4");
  const CollectiveCost c = collectiveCost(t, OpType::kAllreduce, 4'000'000, shapeOfWorld(t, 2),
                                          A::kRing);
  expectSeconds(c.interS, 1.0 * 4e6 / 2.5e9);  // 2(n-1)/n = 1 at n = 2
}

TEST(NetworkModel, ASingleRankAndZeroBytesCostNothingButLatency) {
  const Topology t = twoNodes();
  EXPECT_EQ(collectiveCost(t, OpType::kAllreduce, 1 << 20, shapeOfWorld(t, 1)).seconds(), 0);
  const CollectiveCost barrier = collectiveCost(t, OpType::kBarrier, 0, shapeOfWorld(t, 8));
  expectSeconds(barrier.seconds(), 3 * 5e-6);  // log2(8) dissemination rounds between nodes
  EXPECT_THROW(collectiveCost(t, OpType::kAllreduce, -1, shapeOfWorld(t, 2)), ValueError);
}

TEST(NetworkModel, PresetsParseAndBadSpecsNameThePartAndTheChoices) {
  for (const auto& name : topologyPresetNames()) {
    const Topology t = parseTopology(name);
    EXPECT_GE(t.ranksPerNode, 1) << name;
    EXPECT_GT(t.intra.bandwidthGBs, 0) << name;
    EXPECT_GT(t.inter.bandwidthGBs, 0) << name;
  }
  EXPECT_EQ(parseTopology("dgx-h100").ranksPerNode, 8);
  const auto expectBad = [](const std::string& spec, const std::string& part) {
    try {
      parseTopology(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const ValueError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(part), std::string::npos) << what;
      EXPECT_NE(what.find("dgx-h100"), std::string::npos) << what;  // the choices
    }
  };
  expectBad("dgx-a100", "unknown preset");
  expectBad("ranks_per_node=0,intra=nvlink,inter=pcie", "ranks_per_node='0'");
  expectBad("ranks_per_node=2.5,intra=nvlink,inter=pcie", "not a whole number");
  expectBad("ranks_per_node=8,intra=nvlink", "required");
  expectBad("ranks_per_node=8,intra=warp,inter=pcie", "intra='warp' is not a link preset");
  expectBad("ranks_per_node=8,intra=1:nan,inter=pcie", "intra bandwidth='nan'");
  expectBad("ranks_per_node=8,intra=1:inf,inter=pcie", "intra bandwidth='inf'");
  expectBad("ranks_per_node=8,intra=-1:10,inter=pcie", "intra latency='-1'");
  expectBad("ranks_per_node=8,intra=1:0,inter=pcie", "intra bandwidth='0'");
  expectBad("ranks_per_node=8,intra=nvlink,inter=pcie,oversubscription=0.5", "oversubscription");
  expectBad("ranks_per_node=8,intra=nvlink,inter=pcie,colour=red", "unknown key 'colour'");
  expectBad("ranks_per_node=99999999999,intra=nvlink,inter=pcie", "ranks_per_node");
  EXPECT_THROW(parseAlgorithm("butterfly"), ValueError);
  EXPECT_EQ(parseAlgorithm("hierarchical"), A::kHierarchical);
}

}  // namespace
}  // namespace distlab::emulator
