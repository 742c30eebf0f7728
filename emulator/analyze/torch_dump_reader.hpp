#pragma once
// Reading PyTorch's flight-recorder dumps for `distlab analyze`: the pickle
// PyTorch writes on a timeout (c10's pickler; any pickle of protocol 2 to 5
// of the same value) and the JSON of _dump_nccl_trace_json. Both hold the
// same fields (the table in emulator/cli/README.md, "distlab analyze"); the
// JSON form writes pg_status counters as text and a time not reached as 0.
//
// Note [Reading PyTorch's dumps]
// A PyTorch dump becomes the RankDump distlab's analysis reads:
// - the rank: the dump holds none; it is the number the file name ends in
//   ("<prefix><rank>", an extension such as ".json" or ".pkl" dropped), as
//   PyTorch's analyzer takes it; a top-level "rank" (distlab's export writes
//   one) wins.
// - the group of an entry is process_group[0], a key of pg_config; a group's
//   ranks are sorted, so group rank i is the i-th smallest global rank, as
//   PyTorch numbers them; pg_status is keyed by the pg_id of the entries.
// - the op: profiling_name "<backend>:<op>[ <src>-><dst> | <dst><-<src>]",
//   any backend; <op> by torch_names.hpp; the peer of a send or recv from its
//   suffix. "coalesced" markers, splits and windows are left out.
// - sequence numbers: collective_seq_id as recorded; point-to-point
//   operations are renumbered per (group, peer, direction) in the order
//   recorded, because distlab matches a send with the receive of the same
//   number on its peer while PyTorch counts them per group.
// - sizes: an all_gather whose one output holds world times its input is
//   read as world outputs of the input's shape (PyTorch records the flat
//   tensor), so the analysis compares what each rank expects from each peer.
// - dtypes: c10's names become distlab's ("Float" -> "float32").
// - distlab's extras, when present (its export writes them): "reduce_op",
//   and "root", a collective's root in group ranks.
// - version: "<major>.<minor>" of integers, major 2 (any minor); anything
//   else is refused, naming the field.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "emulator/analyze/dump_reader.hpp"

namespace distlab::emulator {

enum class DumpFormat { kDistlab, kTorchPickle, kTorchJson };

// By content: a pickle is PyTorch's; JSON whose top-level 'version' (the
// last key of a sorted object) is PyTorch's "2.<minor>" is PyTorch's; other
// JSON is distlab's, whose reader names what is wrong (a version neither
// writes included).
DumpFormat detectDumpFormat(std::string_view bytes);

// The rank a file name ends in, or -1.
int rankFromFileName(const std::string& path);

// A PyTorch dump's value (unpickled or parsed) as distlab reads it. Throws
// ValueError "analyze: <path>: <where>: <what>; expected ..." on a missing or
// mistyped field, an unknown op name or state, a malformed version, and for
// no rank in the name.
RankDump parseTorchDump(const nlohmann::json& top, const std::string& path);

// Any of the three formats, by detectDumpFormat; the caps of Note [Dump caps]
// hold for each.
RankDump readAnyDumpFile(const std::string& path);

}  // namespace distlab::emulator
