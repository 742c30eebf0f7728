#pragma once
// `distlab analyze --export-torch DIR DUMP...`: distlab's flight-recorder
// dumps in PyTorch's dump format, one pickle per rank named "<prefix><rank>"
// as PyTorch's dumps are named, for PyTorch's analyzer (fr_trace /
// torchfrtrace) to load unmodified. The field mapping is the table in
// emulator/cli/README.md ("distlab analyze").
//
// Note [PyTorch's dump from distlab's]
// PyTorch's analyzer matches entries across ranks by rules of its own, so the
// export writes what PyTorch's NCCL group would have recorded for the same
// run, not a field-by-field copy:
// - names: profiling_name "nccl:<op>" (torch_names.hpp); send and recv carry
//   " <src>-><dst>" / " <dst><-<src>" in group ranks, as PyTorch numbers them
//   (the position in the sorted rank list); a receive from any source is a
//   recv from the peer its entry names. Entries of no known op ("UNKNOWN")
//   are left out.
// - sequence numbers: PyTorch counts point-to-point operations per group, not
//   per peer, and a send/recv carries the collective sequence number current
//   when it was issued; record_id counts the rank's entries from 0 in the
//   order they were recorded (distlab's record ids are shared by ranks run as
//   threads of one process).
// - sizes: an all_gather's list of outputs is recorded as the one flat tensor
//   PyTorch's NCCL group gathers into ([world, *shape]), and likewise a
//   reduce_scatter's list of inputs; the analyzer checks their element counts
//   against the world size.
// - state: "failed" is not one of PyTorch's states: a failed operation is
//   "started" if it started, else "scheduled", as a PyTorch entry that never
//   completed stays.
// - dtypes: c10's names ("float32" -> "Float").
// - version "2.7": below it, PyTorch's analyzer expects every run of entries
//   sharing a sequence number to end in a "coalesced" entry, which distlab
//   never records; pg_config ranks as the text of the list, as PyTorch
//   writes them; pg_status keyed by pg_id; process_group a list [name, desc]
//   (PyTorch's is a tuple; the analyzer only indexes it).
// Two fields PyTorch does not record are added, for distlab to read back
// (PyTorch's analyzer ignores fields it does not know): "reduce_op" and
// "root" (the root's group rank, numbered as PyTorch numbers them). The
// others of distlab's (splits, error, timed_out) stay in the distlab dump.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emulator/analyze/dump_reader.hpp"

namespace distlab::emulator {

inline constexpr const char* kTorchDumpVersion = "2.7";
inline constexpr const char* kTorchDumpPrefix = "fr_rank_";

// The PyTorch-format dump of one rank (the value the pickle holds).
nlohmann::json torchDumpOf(const RankDump& dump);

// Reads every dump (any format analyzeDumps reads), writes
// "<dir>/<prefix><rank>" for each and returns the paths written. `dir` is
// created if missing. Throws ValueError "analyze: <path>: ..." for a bad dump
// and "analyze: --export-torch <dir>: ..." for a folder that cannot be
// created or written, before any file is written.
std::vector<std::string> exportTorchDumps(const std::vector<std::string>& dumps,
                                          const std::string& dir,
                                          const std::string& prefix = kTorchDumpPrefix);

}  // namespace distlab::emulator
