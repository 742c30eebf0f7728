#pragma once
// A cluster's shape for the network model (collective_cost.hpp): nodes of
// `ranksPerNode` ranks (rank r sits on node r / ranksPerNode), an intra-node
// link between ranks of one node and an inter-node link from each rank to
// the fabric (its NIC: multi-GPU nodes give each GPU its own), and the
// fabric's oversubscription.
//
// Note [Topology model]
// Each link is alpha-beta (link_model.hpp): latency per message step and
// bandwidth in one direction, per rank. Traffic between nodes runs at the
// inter-node link's bandwidth divided by `oversubscription` (a fat tree whose
// upper tier carries 1/k of what the nodes can send: k = 1 non-blocking);
// traffic inside a node at the intra-node link's. A collective's algorithm
// decides which links each of its steps crosses (collective_cost.hpp); when
// several operations are on the same links at once they share the bandwidth
// (the simulator, emulator/predict). What is not modelled: congestion inside
// the fabric beyond the oversubscription factor, adaptive routing, NIC
// message-rate limits, the copy engines and SMs a GPU collective uses.
//
// Presets (figures per rank, one direction; each cites where it comes from):
//   dgx-h100     8 ranks per node, NVLink 4 inside (NVIDIA's H100 SXM
//                datasheet: 900 GB/s of NVLink per GPU, both directions
//                together, so 450 GB/s each way; 2 us per step, a round
//                figure), one 400 Gb/s NDR InfiniBand port per GPU between
//                nodes (the DGX H100 user guide: eight ConnectX-7 ports for
//                compute traffic; 50 GB/s, 3 us, round);
//   pcie-ib      8 ranks per node over PCIe 4 x16 (~24 GB/s, ~5 us), one HDR
//                InfiniBand port (200 Gb/s = 25 GB/s, ~3 us) per node shared
//                by its 8 ranks (3.125 GB/s each);
//   ethernet     4 ranks per node over PCIe, 100 Gb/s Ethernet with TCP per
//                node (12.5 GB/s, ~10 us) shared by its 4 ranks, fabric 2:1
//                oversubscribed (a common cloud layout);
//   flat-<link>  one rank per node on the named link preset everywhere: the
//                flat alpha-beta model the link emulator used before.
// A spec may also be written out: "ranks_per_node=8,intra=nvlink,inter=
// infiniband,oversubscription=2", each link a preset name or LAT_US:BW_GBS
// ("2:450").
#include <string>
#include <vector>

#include "emulator/link/link_model.hpp"

namespace distlab::emulator {

struct Topology {
  std::string name;          // the preset, or the spec as given
  int ranksPerNode = 1;      // >= 1
  LinkModel intra;           // between ranks of one node
  LinkModel inter;           // from a rank to the fabric
  double oversubscription = 1;  // >= 1

  int nodeOf(int rank) const { return rank / ranksPerNode; }
  // The inter-node bandwidth a rank gets (GB/s): its link over the fabric's
  // oversubscription.
  double interBandwidthGBs() const { return inter.bandwidthGBs / oversubscription; }
};

// A preset name (above) or a written-out spec. Throws ValueError naming the
// spec, the part that is wrong and the choices (unknown preset or key, a
// value that is not a finite number in range, ranks_per_node < 1 or above
// 1,048,576, oversubscription < 1, a link with zero bandwidth).
Topology parseTopology(const std::string& spec);
std::vector<std::string> topologyPresetNames();

}  // namespace distlab::emulator
