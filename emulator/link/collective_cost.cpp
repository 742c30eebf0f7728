// Note [Collective algorithms] (collective_cost.hpp): the formulas, one
// function per algorithm family, and the auto choice.
#include "emulator/link/collective_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using comm::OpType;
using A = CollectiveAlgorithm;

constexpr std::array<std::string_view, 5> kNames = {"auto", "ring", "tree", "hierarchical",
                                                    "direct"};

double log2Steps(int n) { return std::ceil(std::log2(static_cast<double>(n))); }

// The link a step between nodes (or, in one node, inside it) crosses, and
// the bandwidth a ring gets with one channel per rank of a node.
struct Edge {
  double alphaS;
  double bandwidth;  // bytes per second
  bool inter;
};

Edge ringEdge(const Topology& t, const GroupShape& g) {
  const double intra = t.intra.bandwidthGBs * 1e9;
  if (g.nodes == 1) return {t.intra.latencyUs * 1e-6, intra, false};
  const double channels = t.interBandwidthGBs() * 1e9 * g.perNode;
  // The slower of the two carries the ring; its class is the one shared.
  return {t.inter.latencyUs * 1e-6, std::min(intra, channels), channels <= intra};
}

CollectiveCost cost(A algorithm, double latencyS, double bandwidthS, bool inter) {
  CollectiveCost c{algorithm, latencyS, 0, 0};
  (inter ? c.interS : c.intraS) = bandwidthS;
  return c;
}

bool isAllreduce(OpType op) {
  return op == OpType::kAllreduce || op == OpType::kAllreduceCoalesced;
}
bool isGatherLike(OpType op) {  // all-gather and reduce-scatter: rings over S/n parts
  switch (op) {
    case OpType::kAllgather: case OpType::kAllgatherBase: case OpType::kAllgatherCoalesced:
    case OpType::kReduceScatter: case OpType::kReduceScatterBase:
      return true;
    default:
      return false;
  }
}
bool isRooted(OpType op) { return op == OpType::kBroadcast || op == OpType::kReduce; }
bool isDirect(OpType op) {
  switch (op) {
    case OpType::kAlltoall: case OpType::kAlltoallBase: case OpType::kGather:
    case OpType::kScatter:
      return true;
    default:
      return false;
  }
}

// One algorithm for one operation, or false when it does not apply.
bool algorithmCost(const Topology& t, OpType op, double s, const GroupShape& g, A a,
                   CollectiveCost* out) {
  const double n = g.size;
  const Edge e = ringEdge(t, g);
  const double bi = t.intra.bandwidthGBs * 1e9, be = t.interBandwidthGBs() * 1e9;
  const double ai = t.intra.latencyUs * 1e-6, ae = t.inter.latencyUs * 1e-6;
  const double m = g.nodes, per = g.perNode;
  if (isAllreduce(op)) {
    if (a == A::kRing) *out = cost(a, 2 * (n - 1) * e.alphaS, 2 * (n - 1) / n * s / e.bandwidth, e.inter);
    else if (a == A::kTree) *out = cost(a, 2 * log2Steps(g.size) * e.alphaS, 2 * s / e.bandwidth, e.inter);
    else if (a == A::kHierarchical && m > 1 && per > 1) {
      *out = {a, 2 * (per - 1) * ai + 2 * (m - 1) * ae, 2 * (per - 1) / per * s / bi,
              2 * (m - 1) / m * (s / per) / be};
    } else return false;
    return true;
  }
  if (isGatherLike(op)) {
    if (a == A::kRing) *out = cost(a, (n - 1) * e.alphaS, (n - 1) / n * s / e.bandwidth, e.inter);
    else if (a == A::kHierarchical && m > 1 && per > 1) {
      *out = {a, (per - 1) * ai + (m - 1) * ae, (per - 1) / per * s / bi,
              (m - 1) / m * (s / per) / be};
    } else return false;
    return true;
  }
  if (isRooted(op)) {
    if (a == A::kRing) *out = cost(a, (n - 1) * e.alphaS, s / e.bandwidth, e.inter);
    else if (a == A::kTree) {
      *out = cost(a, log2Steps(g.size) * e.alphaS, log2Steps(g.size) * s / e.bandwidth, e.inter);
    } else return false;
    return true;
  }
  if (isDirect(op)) {
    if (a != A::kDirect) return false;
    const double inside = (per - 1) / n * s / bi, outside = (n - per) / n * s / be;
    *out = cost(a, (n - 1) * (m > 1 ? ae : ai), std::max(inside, outside), outside > inside);
    return true;
  }
  if (op == OpType::kBarrier) {
    if (a != A::kTree) return false;
    *out = cost(a, log2Steps(g.size) * e.alphaS, 0, e.inter);
    return true;
  }
  return false;  // point-to-point: collectiveCost handles it
}

// The algorithms that may apply to `op`, in the order auto tries them (ties
// go to the earlier one).
std::vector<A> candidates() { return {A::kRing, A::kTree, A::kHierarchical, A::kDirect}; }

}  // namespace

std::string_view algorithmName(CollectiveAlgorithm a) { return kNames[static_cast<size_t>(a)]; }

CollectiveAlgorithm parseAlgorithm(const std::string& text) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (text == kNames[i]) return static_cast<A>(i);
  }
  throw ValueError(fmt::format("unknown collective algorithm '{}'; use auto, ring, tree, "
                               "hierarchical or direct", text));
}

GroupShape shapeOf(const Topology& t, const std::vector<int>& globalRanks) {
  if (globalRanks.empty()) throw ValueError("network model: a group needs at least one rank");
  std::map<int, int> perNode;
  for (int r : globalRanks) {
    if (r < 0) throw ValueError(fmt::format("network model: rank {} is negative", r));
    ++perNode[t.nodeOf(r)];
  }
  GroupShape g{static_cast<int>(globalRanks.size()), static_cast<int>(perNode.size()), 0, {}};
  for (const auto& [node, count] : perNode) {
    g.perNode = std::max(g.perNode, count);
    g.nodeIds.push_back(node);
  }
  return g;
}

GroupShape shapeOfWorld(const Topology& t, int n) {
  if (n < 1) throw ValueError(fmt::format("network model: world size {} must be at least 1", n));
  GroupShape g{n, (n + t.ranksPerNode - 1) / t.ranksPerNode, std::min(n, t.ranksPerNode), {}};
  for (int node = 0; node < g.nodes; ++node) g.nodeIds.push_back(node);
  return g;
}

CollectiveCost collectiveCost(const Topology& t, comm::OpType op, int64_t bytes,
                              const GroupShape& g, CollectiveAlgorithm algorithm,
                              bool crossNode) {
  if (bytes < 0) {
    throw ValueError(fmt::format("network model: {} of {} bytes: a size cannot be negative",
                                 comm::opTypeName(op), bytes));
  }
  if (op == OpType::kUnknown) throw ValueError("network model: unknown operation");
  const double s = static_cast<double>(bytes);
  if (comm::isPointToPoint(op)) {
    const LinkModel& l = crossNode ? t.inter : t.intra;
    const double bw = (crossNode ? t.interBandwidthGBs() : t.intra.bandwidthGBs) * 1e9;
    return cost(A::kDirect, l.latencyUs * 1e-6, s / bw, crossNode);
  }
  if (g.size <= 1) return {algorithm == A::kAuto ? A::kRing : algorithm, 0, 0, 0};
  CollectiveCost best;
  bool found = false;
  for (A a : algorithm == A::kAuto ? candidates() : std::vector<A>{algorithm}) {
    CollectiveCost c;
    if (algorithmCost(t, op, s, g, a, &c) && (!found || c.seconds() < best.seconds())) {
      best = c;
      found = true;
    }
  }
  if (!found) {
    throw ValueError(fmt::format("network model: algorithm {} does not apply to {} on {} "
                                 "node(s) of {} rank(s)", algorithmName(algorithm),
                                 comm::opTypeName(op), g.nodes, g.perNode));
  }
  return best;
}

CollectiveCost collectiveCostOrAuto(const Topology& t, comm::OpType op, int64_t bytes,
                                    const GroupShape& g, CollectiveAlgorithm algorithm,
                                    bool crossNode) {
  // Bad input (negative bytes, an unknown op) goes to collectiveCost's checks.
  if (algorithm != A::kAuto && bytes >= 0 && op != OpType::kUnknown &&
      !comm::isPointToPoint(op) && g.size > 1) {
    CollectiveCost c;
    if (algorithmCost(t, op, static_cast<double>(bytes), g, algorithm, &c)) return c;
    algorithm = A::kAuto;
  }
  return collectiveCost(t, op, bytes, g, algorithm, crossNode);
}

}  // namespace distlab::emulator
