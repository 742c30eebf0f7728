#include "emulator/analyze/dump_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw ValueError(fmt::format("analyze: {}: {}", path, what));
}

template <typename T>
T field(const json& obj, const char* name, const std::string& path, const std::string& where) {
  auto it = obj.find(name);
  if (it == obj.end()) fail(path, fmt::format("{}: missing field '{}'", where, name));
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    fail(path, fmt::format("{}: field '{}' has the wrong type ({})", where, name,
                           it->type_name()));
  }
}

template <typename T>
T optional(const json& obj, const char* name, T fallback) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

// Note [Dump ranges]: ranks are global ranks in [0, kMaxDumpRank]; sequence
// numbers count from 1 and stay below 2^53 (exact in every JSON reader). A
// negative or fractional number, or one past these, is a malformed dump; read
// as-is it would wrap into a huge unsigned value or truncate into another rank.
constexpr int64_t kMaxDumpRank = (int64_t{1} << 20) - 1;
constexpr uint64_t kMaxDumpSeq = uint64_t{1} << 53;

int64_t integerField(const json& obj, const char* name, const std::string& path,
                     const std::string& where, int64_t lo, int64_t hi) {
  auto it = obj.find(name);
  if (it == obj.end()) fail(path, fmt::format("{}: missing field '{}'", where, name));
  // An unsigned value past int64 would wrap in get<int64_t>(): compare it unsigned.
  const bool integral = it->is_number_integer();
  const bool tooBig = it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi);
  const int64_t v = integral && !tooBig ? it->get<int64_t>() : 0;
  if (!integral || tooBig || v < lo || v > hi) {
    fail(path, fmt::format("{}: '{}' = {} is out of range; expected an integer in [{}, {}]",
                           where, name, it->dump(), lo, hi));
  }
  return v;
}

// Sequence numbers: an integer in [0, 2^53]; the one that counts this entry
// (collective or p2p) starts at 1.
void readSeqs(const json& e, const std::string& path, const std::string& where, DumpEntry& d) {
  const auto hi = static_cast<int64_t>(kMaxDumpSeq);
  d.collectiveSeq = static_cast<uint64_t>(integerField(e, "collective_seq_id", path, where, 0, hi));
  d.p2pSeq = static_cast<uint64_t>(integerField(e, "p2p_seq_id", path, where, 0, hi));
  d.isP2P = field<bool>(e, "is_p2p", path, where);
  const char* counting = d.isP2P ? "p2p_seq_id" : "collective_seq_id";
  integerField(e, counting, path, where, 1, hi);
}

DumpEntry parseEntry(const json& e, const std::string& path, size_t index) {
  const std::string where = fmt::format("entry {}", index);
  if (!e.is_object()) fail(path, where + " is not an object");
  DumpEntry d;
  d.group = field<std::string>(e, "pg_id", path, where);
  readSeqs(e, path, where, d);
  d.profilingName = field<std::string>(e, "profiling_name", path, where);
  d.opType = optional<std::string>(e, "op_type", d.profilingName);
  d.inputSizes = field<std::vector<std::vector<int64_t>>>(e, "input_sizes", path, where);
  d.outputSizes = field<std::vector<std::vector<int64_t>>>(e, "output_sizes", path, where);
  d.inputDtypes = field<std::vector<std::string>>(e, "input_dtypes", path, where);
  d.outputDtypes = field<std::vector<std::string>>(e, "output_dtypes", path, where);
  d.state = field<std::string>(e, "state", path, where);
  if (d.state != "scheduled" && d.state != "started" && d.state != "completed" &&
      d.state != "failed") {
    fail(path, fmt::format("{}: unknown state '{}'", where, d.state));
  }
  d.inputSplits = optional<std::vector<int64_t>>(e, "input_splits", {});
  d.outputSplits = optional<std::vector<int64_t>>(e, "output_splits", {});
  d.peer = optional<int>(e, "peer", -1);
  d.tag = optional<int>(e, "tag", 0);
  d.timedOut = optional<bool>(e, "timed_out", false);
  d.error = optional<std::string>(e, "error", "");
  return d;
}

// A group's global ranks: each in range, none twice, the dump's own among them.
std::vector<int> groupRanks(const json& cfg, const std::string& path, const std::string& where,
                            int self) {
  const std::vector<json> list = field<std::vector<json>>(cfg, "ranks", path, where);
  std::vector<int> ranks;
  for (size_t i = 0; i < list.size(); ++i) {
    const json holder{{"ranks", list[i]}};
    const auto r = static_cast<int>(integerField(holder, "ranks", path,
                                                 fmt::format("{} (item {})", where, i), 0,
                                                 kMaxDumpRank));
    if (std::find(ranks.begin(), ranks.end(), r) != ranks.end()) {
      fail(path, fmt::format("{}: rank {} appears twice in 'ranks'", where, r));
    }
    ranks.push_back(r);
  }
  if (std::find(ranks.begin(), ranks.end(), self) == ranks.end()) {
    fail(path, fmt::format("{}: 'ranks' {} does not hold the dump's own rank {}", where,
                           list.size() <= 16 ? json(list).dump() : "(list)", self));
  }
  return ranks;
}

// An entry names a group of pg_config and a peer/root inside it (group rank).
void checkEntryGroup(const RankDump& d, const DumpEntry& e, const std::string& path,
                     size_t index) {
  auto g = d.groups.find(e.group);
  if (g == d.groups.end()) {
    fail(path, fmt::format("entry {}: pg_id '{}' is not a group of pg_config", index, e.group));
  }
  const int size = static_cast<int>(g->second.ranks.size());
  if (e.peer < (e.isP2P ? 0 : -1) || e.peer >= size) {
    fail(path, fmt::format("entry {}: 'peer' = {} is out of range for group '{}' of {} ranks "
                           "(group ranks 0..{})", index, e.peer, e.group, size, size - 1));
  }
}

}  // namespace

RankDump parseDump(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    fail(path, fmt::format("not valid JSON ({})", e.what()));
  }
  if (!j.is_object()) fail(path, "not a flight recorder dump (top level is not an object)");
  if (!j.contains("version") || !j.contains("entries")) {
    fail(path, "not a flight recorder dump (no 'version' or 'entries')");
  }
  RankDump d;
  d.path = path;
  d.rank = static_cast<int>(integerField(j, "rank", path, "top level", 0, kMaxDumpRank));
  d.trigger = optional<std::string>(j, "trigger", "");
  d.reason = optional<std::string>(j, "reason", "");
  const json cfg = j.value("pg_config", json::object());
  const json status = j.value("pg_status", json::object());
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    DumpGroup g;
    const std::string where = "pg_config '" + it.key() + "'";
    g.name = it.key();
    g.desc = optional<std::string>(*it, "desc", "");
    g.backend = optional<std::string>(*it, "backend", "");
    g.ranks = groupRanks(*it, path, where, d.rank);
    if (status.contains(it.key())) {
      const json& s = status[it.key()];
      g.lastEnqueued = optional<uint64_t>(s, "last_enqueued_collective", 0);
      g.lastStarted = optional<uint64_t>(s, "last_started_collective", 0);
      g.lastCompleted = optional<uint64_t>(s, "last_completed_collective", 0);
    }
    d.groups[g.name] = g;
  }
  const json& entries = j["entries"];
  if (!entries.is_array()) fail(path, "'entries' is not an array");
  for (size_t i = 0; i < entries.size(); ++i) {
    d.entries.push_back(parseEntry(entries[i], path, i));
    checkEntryGroup(d, d.entries.back(), path, i);
  }
  return d;
}

RankDump readDumpFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, "cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parseDump(ss.str(), path);
}

}  // namespace distlab::emulator
