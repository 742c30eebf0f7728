#pragma once
// Reading flight-recorder dumps (schema: Note [Flight recorder dumps] in
// runtime/comm/debug/flight_recorder.hpp). Only what the analysis needs is
// kept; unknown fields are ignored so newer dumps still load.
//
// Errors: an unreadable file, invalid JSON or a missing/mistyped field throws
// ValueError "analyze: <path>: <what>" (entry index and field named).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace distlab::emulator {

struct DumpEntry {
  std::string group;
  uint64_t collectiveSeq = 0;
  uint64_t p2pSeq = 0;
  bool isP2P = false;
  std::string opType;         // "ALLREDUCE", "SEND", ...
  std::string profilingName;  // "shm:all_reduce"
  std::vector<std::vector<int64_t>> inputSizes, outputSizes;
  std::vector<std::string> inputDtypes, outputDtypes;
  std::vector<int64_t> inputSplits, outputSplits;
  std::string state;  // scheduled | started | completed | failed
  int peer = -1;      // group rank (p2p) or root
  int tag = 0;
  bool timedOut = false;
  std::string error;
};

struct DumpGroup {
  std::string name, desc, backend;
  std::vector<int> ranks;  // global ranks
  uint64_t lastEnqueued = 0, lastStarted = 0, lastCompleted = 0;
};

struct RankDump {
  std::string path;
  int rank = -1;  // global rank
  std::string trigger, reason;
  std::map<std::string, DumpGroup> groups;
  std::vector<DumpEntry> entries;
};

RankDump readDumpFile(const std::string& path);
// `path` only names the source in errors.
RankDump parseDump(const std::string& text, const std::string& path);

}  // namespace distlab::emulator
