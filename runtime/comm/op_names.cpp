#include "runtime/comm/op_names.hpp"

#include <array>

namespace distlab::comm {

namespace {

using enum OpType;

// Note [Op names]: every name here is PyTorch's, so dumps, errors and scenario
// files read the same as a PyTorch run's.
//   c10d       c10d's OpType as opTypeToString spells it. opTypeName returns
//              it: error texts, DETAIL fingerprints, the flight recorder's
//              `op_type`, which PyTorch's analysis tools compare across ranks.
//   api        the torch.distributed function a user calls. Runtime error
//              messages name it, and scenario files and `distlab bench
//              collectives --ops` take it (emulator/workloads/workload_spec.cpp).
//   profiling  the name ProcessGroupNCCL / ProcessGroupGloo give the work, after
//              their "nccl:" / "gloo:" prefix: the flight recorder's
//              `profiling_name` (flight_recorder.cpp). Where the two backends
//              differ, the row keeps the one that names this operation:
//              allreduce_coalesced, _all_gather_base and _reduce_scatter_base
//              are NCCL's (Gloo records the name of the plain collective it
//              runs them with); all_gather_coalesced, barrier and
//              recvAnySource are Gloo's (NCCL has no allgather_coalesced or
//              recv from any source, and its barrier records the all_reduce it
//              issues).
//              PyTorch appends " <src>-><dst>" / " <dst><-<src>" to send and
//              recv; the rows hold the bare name.
// clang-format off
constexpr std::array<OpNames, static_cast<size_t>(kUnknown)> kTable = {{
    {kBroadcast,          "BROADCAST",            "broadcast",              "broadcast"},
    {kAllreduce,          "ALLREDUCE",            "all_reduce",             "all_reduce"},
    {kAllreduceCoalesced, "ALLREDUCE_COALESCED",  "all_reduce_coalesced",   "allreduce_coalesced"},
    {kReduce,             "REDUCE",               "reduce",                 "reduce"},
    {kAllgather,          "ALLGATHER",            "all_gather",             "all_gather"},
    {kAllgatherBase,      "_ALLGATHER_BASE",      "all_gather_into_tensor", "_all_gather_base"},
    {kAllgatherCoalesced, "ALLGATHER_COALESCED",  "all_gather_coalesced",   "all_gather"},
    {kGather,             "GATHER",               "gather",                 "gather"},
    {kScatter,            "SCATTER",              "scatter",                "scatter"},
    {kReduceScatter,      "REDUCE_SCATTER",       "reduce_scatter",         "reduce_scatter"},
    {kReduceScatterBase,  "_REDUCE_SCATTER_BASE", "reduce_scatter_tensor",  "_reduce_scatter_base"},
    {kAlltoall,           "ALLTOALL",             "all_to_all",             "all_to_all"},
    {kAlltoallBase,       "ALLTOALL_BASE",        "all_to_all_single",      "all_to_all"},
    {kBarrier,            "BARRIER",              "barrier",                "barrier"},
    {kSend,               "SEND",                 "send",                   "send"},
    {kRecv,               "RECV",                 "recv",                   "recv"},
    {kRecvAnysource,      "RECVANYSOURCE",        "recv",                   "recvAnySource"},
}};
// clang-format on

// Rows are looked up by index, so row i must be OpType i.
constexpr bool inOpTypeOrder() {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (static_cast<size_t>(kTable[i].type) != i) return false;
  }
  return true;
}
static_assert(inOpTypeOrder(), "kTable rows must follow the OpType enum");

const OpNames* rowOf(OpType type) {
  const auto i = static_cast<size_t>(type);
  return i < kTable.size() ? &kTable[i] : nullptr;
}

}  // namespace

std::span<const OpNames> opNameTable() { return kTable; }

std::string_view opTypeName(OpType type) {
  const OpNames* row = rowOf(type);
  return row ? row->c10d : "UNKNOWN";
}

std::string_view apiName(OpType type) {
  const OpNames* row = rowOf(type);
  return row ? row->api : "";
}

std::string_view profilingName(OpType type) {
  const OpNames* row = rowOf(type);
  return row ? row->profiling : "unknown";
}

std::optional<OpType> parseApiName(std::string_view name) {
  for (const OpNames& row : kTable) {
    if (row.api == name) return row.type;  // the first "recv" row is kRecv
  }
  return std::nullopt;
}

}  // namespace distlab::comm
