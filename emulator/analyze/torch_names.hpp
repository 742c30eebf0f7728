#pragma once
// PyTorch's names in its flight-recorder dumps against distlab's: the op name
// after the "nccl:" of profiling_name, and the dtype (c10's ScalarType name)
// (torch_dump_export.hpp writes them, torch_dump_reader.hpp reads them).
#include <optional>
#include <string>
#include <string_view>

namespace distlab::emulator {

// The name PyTorch's NCCL group records for distlab's op_type ("ALLREDUCE" ->
// "all_reduce"); nullopt for an op it has no entry for ("UNKNOWN").
std::optional<std::string_view> torchOpName(std::string_view opType);

// distlab's op_type for a PyTorch op name, any backend's ("all_reduce",
// "_all_gather_base", "_reduce_scatter_base", "allreduce_coalesced",
// "recvAnySource", ...). nullopt for a name with no distlab op: the caller
// tells apart the entries it skips (torchOpSkipped) from unknown ones.
std::optional<std::string_view> opTypeOfTorchName(std::string_view torchName);
// Entries PyTorch records that are no operation of their own: the end of a
// coalesced group ("coalesced"), communicator splits and windows.
bool torchOpSkipped(std::string_view torchName);
// Every name opTypeOfTorchName knows, for error messages.
std::string knownTorchOpNames();

// "float32" <-> "Float"; a name not in the table is returned unchanged.
std::string torchDtypeName(std::string_view dtype);
std::string dtypeOfTorchName(std::string_view torchDtype);

}  // namespace distlab::emulator
