#include "emulator/workloads/workload_spec.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "runtime/comm/op_names.hpp"

namespace distlab::emulator {

namespace {

using comm::OpType;

// The operations a script issues through ProcessGroup, in the order the
// parser's error lists them; their names come from the op table.
constexpr std::array kScriptOps = {OpType::kAllreduce,     OpType::kAllreduceCoalesced,
                                   OpType::kBroadcast,     OpType::kReduce,
                                   OpType::kAllgather,     OpType::kAllgatherBase,
                                   OpType::kGather,        OpType::kScatter,
                                   OpType::kReduceScatter, OpType::kReduceScatterBase,
                                   OpType::kAlltoall,      OpType::kAlltoallBase,
                                   OpType::kBarrier,       OpType::kSend,
                                   OpType::kRecv};

// Steps that are no ProcessGroup operation: torch.distributed's
// monitored_barrier and new_group, and distlab's compute (no PyTorch
// equivalent: emulated work between collectives).
constexpr std::array<std::string_view, 4> kOtherOps = {"compute", "wait", "new_group",
                                                       "monitored_barrier"};

// distlab's own spellings, used by scenario files before the ops took PyTorch's
// names; kept so an old file gets the new name instead of a bare list.
constexpr std::array<std::pair<std::string_view, OpType>, 6> kOldSpellings = {{
    {"allreduce", OpType::kAllreduce},
    {"allreduce_coalesced", OpType::kAllreduceCoalesced},
    {"allgather", OpType::kAllgather},
    {"allgather_into_tensor", OpType::kAllgatherBase},
    {"alltoall", OpType::kAlltoall},
    {"alltoall_single", OpType::kAlltoallBase},
}};

std::vector<std::string> collectiveOps() {
  std::vector<std::string> ops;
  for (OpType type : kScriptOps) ops.emplace_back(comm::apiName(type));
  for (std::string_view other : kOtherOps) ops.emplace_back(other);
  return ops;
}

}  // namespace

const std::vector<std::string> kCollectiveOps = collectiveOps();

std::optional<std::string_view> renamedCollectiveOp(std::string_view op) {
  for (const auto& [old, type] : kOldSpellings) {
    if (old == op) return comm::apiName(type);
  }
  return std::nullopt;
}

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

const std::vector<std::string> kRunnerOwnedEnvVars = {
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
    "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "DISTLAB_STORE_EXTERNAL",
    "DISTLAB_STORE_PREFIX", "DISTLAB_LAUNCH_RELEASE_FD", "DISTLAB_SCENARIO", "DISTLAB_SCENARIO_RESULT_DIR",
    "DISTLAB_SCENARIO_TRACE", "TORCH_DISTRIBUTED_DEBUG", "TORCH_FR_DUMP_TEMP_FILE",
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"};

}  // namespace distlab::emulator
