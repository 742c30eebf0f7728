#include "emulator/workloads/workload_spec.hpp"

#include <algorithm>

namespace distlab::emulator {

const std::vector<std::string> kCollectiveOps = {
    "allreduce", "allreduce_coalesced", "broadcast", "reduce", "allgather",
    "allgather_into_tensor", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor",
    "alltoall", "alltoall_single", "barrier", "send", "recv", "compute", "new_group",
    "monitored_barrier"};

bool CollectiveStep::issuedBy(int rank) const {
  if (!ranks.empty() && std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) return false;
  if (!group.empty() && std::find(group.begin(), group.end(), rank) == group.end() &&
      op != "new_group") {
    return false;
  }
  return true;
}

bool CollectiveStep::countsOnWorld() const {
  return group.empty() && op != "send" && op != "recv" && op != "compute" && op != "new_group" &&
         op != "monitored_barrier";
}

}  // namespace distlab::emulator
