#pragma once
// The network model's per-operation cost: how long one collective takes on a
// topology (topology.hpp), by algorithm, split into what can be shared.
//
// Note [Collective algorithms]
// A group of n ranks spans m nodes with at most g of its ranks on one node
// (GroupShape). A ring that stays in one node runs on the intra-node link; a
// ring that crosses nodes runs one channel per rank of a node (NCCL's rings,
// one per NIC), so its bandwidth is the smaller of the intra-node link's and
// g inter-node links' (B = min(B_intra, g * B_inter)) and each step pays the
// inter-node latency. With alpha, B of the link a step crosses and S the
// nccl-tests size (link_model.hpp: per-rank buffer for all_reduce,
// broadcast, reduce and point-to-point; the total for the gather/scatter
// family and all_to_all):
//   all_reduce   ring          2(n-1) alpha + 2(n-1)/n S / B
//                tree          2 ceil(log2 n) alpha + 2 S / B   (pipelined
//                              reduce then broadcast on a binary tree)
//                hierarchical  intra reduce-scatter, inter all_reduce of S/g
//                              on m nodes (every rank on its own NIC), intra
//                              all-gather (m > 1 and g > 1)
//   all_gather,  ring          (n-1) alpha + (n-1)/n S / B
//   reduce_scatter hierarchical  inter phase on S/g among m nodes, intra on S
//   broadcast,   ring          (n-1) alpha + S / B   (pipelined chain)
//   reduce       tree          ceil(log2 n) (alpha + S / B)   (binomial)
//   all_to_all,  direct        (n-1) alpha + max((g-1)/n S / B_intra,
//   gather,                    (n-g)/n S / B_inter): what one rank sends
//   scatter                    inside and outside its node, concurrently
//   send, recv   direct        alpha + S / B of the link between the pair
//   barrier      tree          ceil(log2 n) alpha (dissemination)
// "auto" takes the algorithm with the least time, as NCCL's tuner picks by
// its own model. The bandwidth part is kept per link class so that
// operations overlapping in time can share it (the simulator divides a
// class's bandwidth among the operations on it, emulator/predict).
#include <cstdint>
#include <string>
#include <vector>

#include "emulator/link/topology.hpp"
#include "runtime/comm/types.hpp"

namespace distlab::emulator {

enum class CollectiveAlgorithm { kAuto, kRing, kTree, kHierarchical, kDirect };
// "auto", "ring", "tree", "hierarchical", "direct".
std::string_view algorithmName(CollectiveAlgorithm a);
// Throws ValueError naming the text and the choices.
CollectiveAlgorithm parseAlgorithm(const std::string& text);

// Where a group's ranks sit.
struct GroupShape {
  int size = 1;          // n
  int nodes = 1;         // m: distinct nodes
  int perNode = 1;       // g: the most ranks of the group on one node
  std::vector<int> nodeIds;  // the nodes, ascending
};
// From the group's global ranks (each >= 0). Throws ValueError for none.
GroupShape shapeOf(const Topology& t, const std::vector<int>& globalRanks);
// The first n ranks of the job (the default group of a world of n).
GroupShape shapeOfWorld(const Topology& t, int n);

struct CollectiveCost {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;  // the one costed
  double latencyS = 0;  // the alpha terms, never shared
  double intraS = 0;    // bandwidth terms on intra-node links, at full bandwidth
  double interS = 0;    // bandwidth terms on inter-node links, at full bandwidth
  double seconds() const { return latencyS + intraS + interS; }
};

// What the link emulator (link_backend.hpp) and the replay (emulator/predict)
// both take: the topology and the algorithm for every collective.
struct NetworkModel {
  Topology topology;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
};

// The cost of `op` moving `bytes` (the nccl-tests size) in a group of shape
// `g`. `algorithm` kAuto picks the cheapest that applies; asking for one that
// does not apply to `op` (tree all-to-all, hierarchical on one node) throws
// ValueError naming both. `crossNode` is for send/recv only: whether the two
// ranks sit on different nodes. A group of one rank, and zero bytes with no
// steps, cost nothing. Throws ValueError for negative bytes or kUnknown.
CollectiveCost collectiveCost(const Topology& t, comm::OpType op, int64_t bytes,
                              const GroupShape& g,
                              CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto,
                              bool crossNode = false);

// The same where `algorithm` applies to `op` on this group, else kAuto's
// choice (an all-to-all under "tree", a one-node group under
// "hierarchical"): what the link emulator and the replay charge, so that a
// scenario or --algorithm names the algorithm for the operations it fits.
CollectiveCost collectiveCostOrAuto(const Topology& t, comm::OpType op, int64_t bytes,
                                    const GroupShape& g, CollectiveAlgorithm algorithm,
                                    bool crossNode = false);

}  // namespace distlab::emulator
