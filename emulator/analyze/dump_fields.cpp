#include "emulator/analyze/dump_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;

// Note [Dump ranges]: ranks are global ranks in [0, kMaxDumpRank]; sequence
// numbers count from 1 and stay below 2^53 (exact in every JSON reader);
// tensor sizes, splits and each shape's element count are in [0, 2^63). A
// negative or fractional number, or one past these, is a malformed dump: read
// as-is it would wrap into a huge unsigned value, a negative size or another
// rank.
constexpr int64_t kMaxSize = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinTag = std::numeric_limits<int>::min();
constexpr int64_t kMaxTag = std::numeric_limits<int>::max();

// comm::opTypeName of every OpType (fr_analysis_hostile_test checks that).
// clang-format off
constexpr std::array<std::string_view, 18> kOpTypes = {
    "BROADCAST", "ALLREDUCE", "ALLREDUCE_COALESCED", "REDUCE", "ALLGATHER", "_ALLGATHER_BASE",
    "ALLGATHER_COALESCED", "GATHER", "SCATTER", "REDUCE_SCATTER", "_REDUCE_SCATTER_BASE",
    "ALLTOALL", "ALLTOALL_BASE", "BARRIER", "SEND", "RECV", "RECVANYSOURCE", "UNKNOWN"};
// clang-format on
constexpr std::array<std::string_view, 4> kStates = {"scheduled", "started", "completed", "failed"};

std::string shownValue(const json& v) {
  return shownText(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

const json& required(const json& obj, const char* name, const DumpSite& s) {
  auto it = obj.find(name);
  if (it == obj.end()) failDump(s.path, fmt::format("{}: missing field '{}'", s.where, name));
  return *it;
}

// nullptr when the field is missing or null (the writer writes null for
// "not reached yet").
const json* optionalField(const json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void wrongType(const std::string& path,
                            const std::string& where,
                            const char* name,
                            const json& v,
                            std::string_view expected) {
  failDump(path, fmt::format("{}: '{}' = {} has the wrong type ({}); expected {}", where, name,
                             shownValue(v), v.type_name(), expected));
}

// `hi` >= 0. An unsigned value past int64 would wrap in get<int64_t>():
// it is compared unsigned.
bool integerInRange(const json& v, int64_t lo, int64_t hi, int64_t* out) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return false;
    *out = static_cast<int64_t>(u);
  } else {
    *out = v.get<int64_t>();
  }
  return *out >= lo && *out <= hi;
}

[[noreturn]] void badInteger(const std::string& path,
                             const std::string& where,
                             const char* name,
                             const json& v,
                             int64_t lo,
                             int64_t hi) {
  const std::string expected = fmt::format("an integer in [{}, {}]", lo, hi);
  if (!v.is_number()) wrongType(path, where, name, v, expected);
  failDump(path, fmt::format("{}: '{}' = {} is out of range; expected {}", where, name,
                             shownValue(v), expected));
}

int64_t integerField(const json& obj, const char* name, const DumpSite& s, int64_t lo, int64_t hi) {
  const json& v = required(obj, name, s);
  int64_t x = 0;
  if (!integerInRange(v, lo, hi, &x)) badInteger(s.path, s.where, name, v, lo, hi);
  return x;
}

int64_t optionalInteger(const json& obj,
                        const char* name,
                        const DumpSite& s,
                        int64_t lo,
                        int64_t hi,
                        int64_t fallback) {
  return optionalField(obj, name) ? integerField(obj, name, s, lo, hi) : fallback;
}

std::string stringField(const json& obj, const char* name, const DumpSite& s) {
  const json& v = required(obj, name, s);
  if (!v.is_string()) wrongType(s.path, s.where, name, v, "a string");
  return v.get<std::string>();
}

std::string optionalString(const json& obj, const char* name, const DumpSite& s) {
  return optionalField(obj, name) ? stringField(obj, name, s) : std::string();
}

bool boolField(const json& obj, const char* name, const DumpSite& s) {
  const json& v = required(obj, name, s);
  if (!v.is_boolean()) wrongType(s.path, s.where, name, v, "true or false");
  return v.get<bool>();
}

const json& arrayField(const json& obj,
                       const char* name,
                       const DumpSite& s,
                       std::string_view expected) {
  const json& v = required(obj, name, s);
  if (!v.is_array()) wrongType(s.path, s.where, name, v, expected);
  return v;
}

std::string itemWhere(const DumpSite& s, std::string_view item) {
  return fmt::format("{} (item {})", s.where, item);
}

std::vector<std::string> stringList(const json& obj, const char* name, const DumpSite& s) {
  const json& list = arrayField(obj, name, s, "an array of strings");
  std::vector<std::string> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) {
      wrongType(s.path, itemWhere(s, std::to_string(i)), name, list[i], "a string");
    }
    out.push_back(list[i].get<std::string>());
  }
  return out;
}

// Sizes or splits, each in [0, 2^63); `item` prefixes the item index in errors.
std::vector<int64_t> sizeList(const json& list,
                              const char* name,
                              const DumpSite& s,
                              const std::string& item) {
  if (!list.is_array()) {
    wrongType(s.path, item.empty() ? s.where : itemWhere(s, item), name, list,
              "an array of integers in [0, 9223372036854775807]");
  }
  std::vector<int64_t> out(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    if (!integerInRange(list[i], 0, kMaxSize, &out[i])) {
      const std::string at = item.empty() ? std::to_string(i) : fmt::format("{}, {}", item, i);
      badInteger(s.path, itemWhere(s, at), name, list[i], 0, kMaxSize);
    }
  }
  return out;
}

// Tensor shapes; each shape's element count must fit int64 too (the analysis
// multiplies the sizes).
std::vector<std::vector<int64_t>> shapeList(const json& obj, const char* name, const DumpSite& s) {
  const json& list = arrayField(obj, name, s, "an array of shapes (arrays of integers)");
  std::vector<std::vector<int64_t>> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    out.push_back(sizeList(list[i], name, s, std::to_string(i)));
    int64_t n = 1;
    for (int64_t d : out.back()) {
      if (__builtin_mul_overflow(n, d, &n)) {
        failDump(s.path, fmt::format("{}: '{}' = {} has more than 2^63-1 elements; expected a "
                                     "shape of fewer elements",
                                     itemWhere(s, std::to_string(i)), name, shownValue(list[i])));
      }
    }
  }
  return out;
}

std::vector<int64_t> optionalSplits(const json& obj, const char* name, const DumpSite& s) {
  const json* v = optionalField(obj, name);
  return v ? sizeList(*v, name, s, "") : std::vector<int64_t>();
}

// Sequence numbers: an integer in [0, 2^53]; the one that counts this entry
// (collective or p2p) starts at 1.
void readSeqs(const json& e, const DumpSite& s, DumpEntry& d) {
  d.collectiveSeq = static_cast<uint64_t>(integerField(e, "collective_seq_id", s, 0, kMaxDumpSeq));
  d.p2pSeq = static_cast<uint64_t>(integerField(e, "p2p_seq_id", s, 0, kMaxDumpSeq));
  d.isP2P = boolField(e, "is_p2p", s);
  integerField(e, d.isP2P ? "p2p_seq_id" : "collective_seq_id", s, 1, kMaxDumpSeq);
}

// A known op name whose kind (point-to-point or not) agrees with is_p2p: a
// name from another vocabulary ("shm:broadcast") would otherwise be compared
// with real op names and named as a mismatch.
std::string readOpType(const json& e, const DumpSite& s, bool isP2P) {
  std::string op = stringField(e, "op_type", s);
  if (!isKnownOpType(op)) {
    failDump(s.path, fmt::format("{}: 'op_type' = {} is not an op name; expected one of {}",
                                 s.where, shownValue(e.at("op_type")), fmt::join(kOpTypes, ", ")));
  }
  if ((op == "SEND" || op == "RECV" || op == "RECVANYSOURCE") != isP2P) {
    failDump(s.path, fmt::format("{}: 'op_type' = \"{}\" disagrees with 'is_p2p' = {}; expected "
                                 "'is_p2p' true exactly for SEND, RECV and RECVANYSOURCE",
                                 s.where, op, isP2P));
  }
  return op;
}

std::string readState(const json& e, const DumpSite& s) {
  std::string state = stringField(e, "state", s);
  if (std::find(kStates.begin(), kStates.end(), state) == kStates.end()) {
    failDump(s.path, fmt::format("{}: 'state' = {} is not a known state; expected one of {}",
                                 s.where, shownValue(e.at("state")), fmt::join(kStates, ", ")));
  }
  return state;
}

// process_group: [name, desc] of the entry's group, when present.
void checkProcessGroup(const json& e, const DumpSite& s, const std::string& group) {
  const json* v = optionalField(e, "process_group");
  if (!v) return;
  if (!v->is_array() || v->size() != 2 || !(*v)[0].is_string() || !(*v)[1].is_string()) {
    wrongType(s.path, s.where, "process_group", *v, "an array [name, desc] of two strings");
  }
  if ((*v)[0].get_ref<const std::string&>() != group) {
    failDump(s.path, fmt::format("{}: 'process_group' = {} names another group than 'pg_id' = "
                                 "'{}'; expected the same name",
                                 s.where, shownValue(*v), shownText(group)));
  }
}

}  // namespace

void readExportFields(const json& e, const DumpSite& s, DumpEntry& d) {
  constexpr int64_t kMaxNs = std::numeric_limits<int64_t>::max();
  d.recordId = static_cast<uint64_t>(optionalInteger(e, "record_id", s, 0, kMaxDumpSeq, 0));
  d.opId = static_cast<uint64_t>(optionalInteger(e, "op_id", s, 0, kMaxDumpSeq, 0));
  d.createdNs = optionalInteger(e, "time_created_ns", s, 0, kMaxNs, 0);
  d.startedNs = optionalInteger(e, "time_discovered_started_ns", s, 0, kMaxNs, 0);
  d.completedNs = optionalInteger(e, "time_discovered_completed_ns", s, 0, kMaxNs, 0);
  d.timeoutMs = optionalInteger(e, "timeout_ms", s, 0, kMaxNs, 0);
  d.reduceOp = optionalString(e, "reduce_op", s);
}

int64_t dumpInteger(const json& obj, const char* name, const DumpSite& s, int64_t lo, int64_t hi) {
  return integerField(obj, name, s, lo, hi);
}
int64_t dumpOptionalInteger(const json& obj,
                            const char* name,
                            const DumpSite& s,
                            int64_t lo,
                            int64_t hi,
                            int64_t fallback) {
  return optionalInteger(obj, name, s, lo, hi, fallback);
}
std::string dumpString(const json& obj, const char* name, const DumpSite& s) {
  return stringField(obj, name, s);
}
bool dumpBool(const json& obj, const char* name, const DumpSite& s) {
  return boolField(obj, name, s);
}
std::vector<std::vector<int64_t>> dumpShapes(const json& obj, const char* name, const DumpSite& s) {
  return shapeList(obj, name, s);
}
std::vector<std::string> dumpStrings(const json& obj, const char* name, const DumpSite& s) {
  return stringList(obj, name, s);
}
const json& dumpRequired(const json& obj, const char* name, const DumpSite& s) {
  return required(obj, name, s);
}
std::string shownJson(const json& v) { return shownValue(v); }

void failDump(const std::string& path, const std::string& what) {
  std::string line = fmt::format("analyze: {}: {}", path, what);
  std::string out;
  for (unsigned char c : line) {
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  throw ValueError(out);
}

std::string shownText(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string out(s.substr(0, kMax));
  if (s.size() > kMax) out += "...";
  return out;  // failDump escapes what is left
}

bool isKnownOpType(std::string_view name) {
  return std::find(kOpTypes.begin(), kOpTypes.end(), name) != kOpTypes.end();
}

std::string_view knownDumpVersion() { return "2.4-distlab"; }

DumpEntry readEntry(const json& e, const DumpSite& s) {
  DumpEntry d;
  d.group = stringField(e, "pg_id", s);
  readSeqs(e, s, d);
  d.profilingName = stringField(e, "profiling_name", s);
  d.opType = readOpType(e, s, d.isP2P);
  d.inputSizes = shapeList(e, "input_sizes", s);
  d.outputSizes = shapeList(e, "output_sizes", s);
  d.inputDtypes = stringList(e, "input_dtypes", s);
  d.outputDtypes = stringList(e, "output_dtypes", s);
  d.state = readState(e, s);
  d.inputSplits = optionalSplits(e, "input_splits", s);
  d.outputSplits = optionalSplits(e, "output_splits", s);
  d.peer = static_cast<int>(optionalInteger(e, "peer", s, -1, kMaxDumpRank, -1));
  d.tag = static_cast<int>(optionalInteger(e, "tag", s, kMinTag, kMaxTag, 0));
  d.timedOut = optionalField(e, "timed_out") && boolField(e, "timed_out", s);
  d.error = optionalString(e, "error", s);
  readExportFields(e, s, d);
  checkProcessGroup(e, s, d.group);
  return d;
}

DumpGroup readGroupConfig(const std::string& name, const json& cfg, const DumpSite& s) {
  DumpGroup g;
  g.name = name;
  if (optionalField(cfg, "name") && stringField(cfg, "name", s) != name) {
    failDump(s.path, fmt::format("{}: 'name' = {} differs from the group's key; expected the "
                                 "same name",
                                 s.where, shownValue(cfg.at("name"))));
  }
  g.desc = optionalString(cfg, "desc", s);
  g.backend = optionalString(cfg, "backend", s);
  const json& list = arrayField(cfg, "ranks", s, "an array of global ranks");
  // Repeats are found with a bitmap over every possible rank: linear, where
  // a search of the ranks read so far was quadratic (1M ranks took 155 s).
  std::vector<bool> seen(static_cast<size_t>(kMaxDumpRank) + 1);
  g.ranks.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    int64_t r = 0;
    if (!integerInRange(list[i], 0, kMaxDumpRank, &r)) {
      badInteger(s.path, itemWhere(s, std::to_string(i)), "ranks", list[i], 0, kMaxDumpRank);
    }
    if (seen[r]) failDump(s.path, fmt::format("{}: rank {} appears twice in 'ranks'", s.where, r));
    seen[r] = true;
    g.ranks.push_back(static_cast<int>(r));
  }
  return g;
}

void readGroupStatus(const json& status, const DumpSite& s, DumpGroup& g) {
  auto counter = [&](const char* name) {
    return static_cast<uint64_t>(optionalInteger(status, name, s, 0, kMaxDumpSeq, 0));
  };
  g.lastEnqueued = counter("last_enqueued_collective");
  g.lastStarted = counter("last_started_collective");
  g.lastCompleted = counter("last_completed_collective");
}

void checkDumpVersion(const json& top, const DumpSite& s) {
  const json& v = required(top, "version", s);
  if (!v.is_string() || v.get_ref<const std::string&>() != knownDumpVersion()) {
    failDump(s.path, fmt::format("{}: 'version' = {} is not a dump version this reader knows; "
                                 "expected \"{}\" (distlab's), or \"2.<minor>\" for a "
                                 "PyTorch dump",
                                 s.where, shownValue(v), knownDumpVersion()));
  }
}

void readTopLevel(const json& top, const DumpSite& s, RankDump& d) {
  d.rank = static_cast<int>(integerField(top, "rank", s, 0, kMaxDumpRank));
  d.trigger = optionalString(top, "trigger", s);
  d.reason = optionalString(top, "reason", s);
}

}  // namespace distlab::emulator
