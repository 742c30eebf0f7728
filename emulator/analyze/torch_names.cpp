#include "emulator/analyze/torch_names.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace distlab::emulator {
namespace {

struct TorchOpRow {
  std::string_view opType;  // distlab's (comm::opTypeName)
  std::string_view torch;   // PyTorch's profiling name, without "nccl:"
  bool written;             // the name the export writes for opType
};

// Note [PyTorch op names]: the first row of an op_type is what PyTorch's NCCL
// group records for it, and what the export writes; the rows after it are the
// other names PyTorch's groups record for the same operation (Gloo's, the
// out-of-place and single-tensor variants), read but never written.
// ALLTOALL and ALLTOALL_BASE are both "all_to_all" in PyTorch: the reader
// tells them apart by the number of input tensors (torch_dump_reader.cpp).
// clang-format off
constexpr std::array<TorchOpRow, 33> kOps = {{
    {"BROADCAST", "broadcast", true},           {"BROADCAST", "_broadcast_oop", false},
    {"ALLREDUCE", "all_reduce", true},
    {"ALLREDUCE_COALESCED", "allreduce_coalesced", true},
    {"REDUCE", "reduce", true},                 {"REDUCE", "_reduce_oop", false},
    {"ALLGATHER", "all_gather", true},          {"ALLGATHER", "all_gather_v", false},
    {"_ALLGATHER_BASE", "_all_gather_base", true}, {"_ALLGATHER_BASE", "all_gather_single", false},
    {"_ALLGATHER_BASE", "_allgather_base", false},
    {"ALLGATHER_COALESCED", "ALLGATHER_coalesced", true},
    {"ALLGATHER_COALESCED", "all_gather_into_tensor_coalesced", false},
    {"ALLGATHER_COALESCED", "allgather_coalesced", false},
    {"GATHER", "gather", true},                 {"SCATTER", "scatter", true},
    {"REDUCE_SCATTER", "reduce_scatter", true}, {"REDUCE_SCATTER", "reduce_scatter_v", false},
    {"_REDUCE_SCATTER_BASE", "_reduce_scatter_base", true},
    {"_REDUCE_SCATTER_BASE", "reduce_scatter_single", false},
    {"_REDUCE_SCATTER_BASE", "reduce_scatter_tensor_coalesced", false},
    {"_REDUCE_SCATTER_BASE", "REDUCE_SCATTER_coalesced", false},
    {"ALLTOALL", "all_to_all", true},
    {"ALLTOALL_BASE", "all_to_all", true},      {"ALLTOALL_BASE", "all_to_all_single", false},
    {"ALLTOALL_BASE", "all_to_all_v_single", false},
    {"BARRIER", "barrier", true},               {"BARRIER", "all_reduce_barrier", false},
    {"SEND", "send", true},                     {"RECV", "recv", true},
    {"RECVANYSOURCE", "recv", true},            {"RECVANYSOURCE", "recvAnySource", false},
    {"RECVANYSOURCE", "recv_any_source", false},
}};
// clang-format on

constexpr std::array<std::string_view, 3> kSkipped = {"coalesced", "split", "new_window"};

constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kDtypes = {{
    {"float32", "Float"},
    {"float64", "Double"},
    {"float16", "Half"},
    {"bfloat16", "BFloat16"},
    {"int8", "Char"},
    {"uint8", "Byte"},
    {"int16", "Short"},
    {"int32", "Int"},
    {"int64", "Long"},
    {"bool", "Bool"},
}};

}  // namespace

std::optional<std::string_view> torchOpName(std::string_view opType) {
  for (const auto& row : kOps) {
    if (row.written && row.opType == opType) return row.torch;
  }
  return std::nullopt;
}

std::optional<std::string_view> opTypeOfTorchName(std::string_view torchName) {
  for (const auto& row : kOps) {
    if (row.torch == torchName) return row.opType;  // the first row of a name
  }
  return std::nullopt;
}

bool torchOpSkipped(std::string_view torchName) {
  for (auto s : kSkipped) {
    if (s == torchName) return true;
  }
  return false;
}

std::string knownTorchOpNames() {
  std::string out;
  for (const auto& row : kOps) {
    if (out.find(fmt::format(" {},", row.torch)) != std::string::npos) continue;
    out += fmt::format(" {},", row.torch);
  }
  for (auto s : kSkipped) out += fmt::format(" {},", s);
  out.pop_back();
  return out.substr(1);
}

std::string torchDtypeName(std::string_view dtype) {
  for (const auto& [ours, theirs] : kDtypes) {
    if (ours == dtype) return std::string(theirs);
  }
  return std::string(dtype);
}

std::string dtypeOfTorchName(std::string_view torchDtype) {
  for (const auto& [ours, theirs] : kDtypes) {
    if (theirs == torchDtype) return std::string(ours);
  }
  return std::string(torchDtype);
}

}  // namespace distlab::emulator
