#pragma once
// Reading flight-recorder dumps (schema: Note [Flight recorder dumps] in
// runtime/comm/debug/flight_recorder.hpp). Only what the analysis needs is
// kept; other fields are not read, so newer dumps still load, but every field
// the analysis reads is checked for its type and range (dump_fields.hpp).
//
// Errors: an unreadable file, invalid JSON, a missing/mistyped/out-of-range
// field or a dump past a cap below throws ValueError "analyze: <path>:
// <where>: <what>" on one line; <where> names the entry index or group and
// the field ("entry 12 (item 0, 1): 'input_sizes' = ... is out of range;
// expected ..."), or for the JSON itself the spot ("near entries[3].peer").
// `distlab analyze` exits 2 on it. A dump of an unknown 'version' is
// rejected before any other field error is reported.
//
// Note [Dump caps]
// A dump is untrusted input (it may be damaged, truncated or hostile), so
// reading one is bounded in memory and near-linear in time:
// - kMaxDumpBytes: the file size, checked before a byte is parsed. A full
//   default ring (2,000 entries) written by flightRecorderJson() is 1.7 MB
//   (fr_analysis_hostile_test measures it), so the cap holds ~40 of them.
// - The file is parsed as a stream (SAX): each entry and each group is
//   converted to the structs below as soon as it closes and its JSON is
//   dropped; no JSON tree of the whole file is ever built.
// - kMaxDumpDepth: nesting of arrays/objects (a real dump nests 5 deep);
//   a file of '[' is rejected at once.
// - kMaxDumpListLength: items of any one array, e.g. a group's 'ranks' (a
//   group never holds more than every rank: ranks are below 2^20).
// - kMaxDumpValues: JSON values (numbers, strings, arrays, objects) in the
//   whole file; a full ring holds 76,000, so the cap holds ~27 of them. It
//   bounds memory where the size cap does not: 2M tiny values ("[[],[],..."
//   or "{},{},...") under it would take ~50 times their text's size.
// Together: reading one dump adds at most ~200 MB resident (measured with 2M
// empty arrays/objects/strings) and takes about a second of CPU.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace distlab::emulator {

inline constexpr uint64_t kMaxDumpBytes = uint64_t{64} << 20;  // 64 MiB
inline constexpr size_t kMaxDumpDepth = 32;
inline constexpr size_t kMaxDumpListLength = size_t{1} << 20;  // 1,048,576
inline constexpr size_t kMaxDumpValues = size_t{1} << 21;      // 2,097,152

struct DumpEntry {
  std::string group;
  uint64_t collectiveSeq = 0;
  uint64_t p2pSeq = 0;
  bool isP2P = false;
  std::string opType;         // "ALLREDUCE", "SEND", ... (a known op name)
  std::string profilingName;  // "shm:all_reduce"
  // Every size is in [0, 2^63) and so is each shape's element count.
  std::vector<std::vector<int64_t>> inputSizes, outputSizes;
  std::vector<std::string> inputDtypes, outputDtypes;
  std::vector<int64_t> inputSplits, outputSplits;
  std::string state;  // scheduled | started | completed | failed
  int peer = -1;      // group rank (p2p) or root, within the group
  int tag = 0;
  bool timedOut = false;
  std::string error;
  // Read when present, for `--export-torch` (torch_dump_export.hpp); the
  // analysis does not use them. Times are wall-clock ns, 0 = not reached.
  uint64_t recordId = 0, opId = 0;
  int64_t createdNs = 0, startedNs = 0, completedNs = 0, timeoutMs = 0;
  std::string reduceOp;
};

struct DumpGroup {
  std::string name, desc, backend;
  std::vector<int> ranks;  // global ranks, distinct, each in [0, 2^20)
  uint64_t lastEnqueued = 0, lastStarted = 0, lastCompleted = 0;
};

struct RankDump {
  std::string path;
  int rank = -1;  // global rank
  std::string trigger, reason;
  std::map<std::string, DumpGroup> groups;
  std::vector<DumpEntry> entries;
};

// Throws ValueError (see the top of this file), including for a path that is
// not a regular file or is larger than kMaxDumpBytes.
RankDump readDumpFile(const std::string& path);
// Opens `path` for reading once it is known to be a regular file of at most
// kMaxDumpBytes (checked before a byte is read: Note [Dump caps]); throws
// ValueError naming the path otherwise. Shared by every dump format's reader.
std::ifstream openDumpFile(const std::string& path);
// Throws ValueError naming `path` when `bytes` exceeds kMaxDumpBytes.
void checkDumpSize(uintmax_t bytes, const std::string& path);
// `path` only names the source in errors. Same checks, but the size cap
// applies to text.size().
RankDump parseDump(const std::string& text, const std::string& path);

}  // namespace distlab::emulator
