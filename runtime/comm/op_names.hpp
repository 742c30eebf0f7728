#pragma once
// The names of each operation, one table for the whole runtime (op_names.cpp):
// the c10d OpType string, the torch.distributed Python API name and the
// flight recorder's profiling name. Every other spelling of an operation reads
// this table, so a name changes in one place. Thread-safe: constant data.
#include <optional>
#include <span>
#include <string_view>

#include "runtime/comm/types.hpp"

namespace distlab::comm {

struct OpNames {
  OpType type;
  std::string_view c10d;       // "_ALLGATHER_BASE" (what opTypeName returns)
  std::string_view api;        // "all_gather_into_tensor"
  std::string_view profiling;  // "_all_gather_base" (after "<backend>:")
};

// One row per operation, in OpType order; OpType::kUnknown has none (it names
// no operation: opTypeName gives "UNKNOWN", profilingName "unknown").
std::span<const OpNames> opNameTable();

std::string_view apiName(OpType type);        // "" for kUnknown
std::string_view profilingName(OpType type);  // "unknown" for kUnknown

// The OpType of a torch.distributed API name; "recv" gives kRecv (recv from
// any source shares the name: PyTorch tells them apart by src=None).
std::optional<OpType> parseApiName(std::string_view name);

}  // namespace distlab::comm
