#include "emulator/analyze/dump_reader.hpp"

#include <fmt/format.h>

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

DumpEntry parseEntry(const json& e, const std::string& path, size_t index) {
  const std::string where = fmt::format("entry {}", index);
  if (!e.is_object()) fail(path, where + " is not an object");
  DumpEntry d;
  d.group = field<std::string>(e, "pg_id", path, where);
  d.collectiveSeq = field<uint64_t>(e, "collective_seq_id", path, where);
  d.p2pSeq = field<uint64_t>(e, "p2p_seq_id", path, where);
  d.isP2P = field<bool>(e, "is_p2p", path, where);
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
  d.rank = field<int>(j, "rank", path, "top level");
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
    g.ranks = field<std::vector<int>>(*it, "ranks", path, where);
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
  for (size_t i = 0; i < entries.size(); ++i) d.entries.push_back(parseEntry(entries[i], path, i));
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
