#pragma once
// Typed reading of one flight-recorder record (an entry, a group of pg_config
// or pg_status, the top-level fields) from its JSON object. Every field the
// analysis reads is checked when read: its type, its range (Note [Dump
// ranges]) and, for names, membership in what the writer writes. Any failure
// throws ValueError "analyze: <path>: <where>: '<field>' ...; expected ...".
// Fields the analysis does not read are not looked at.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "emulator/analyze/dump_reader.hpp"

namespace distlab::emulator {

// Where a record sits, for errors: the file, and "entry 12", "pg_config 'g'"
// or "top level".
struct DumpSite {
  const std::string& path;
  std::string where;
};

// Throws ValueError "analyze: <path>: <what>", with control characters of
// `what` escaped so the message stays one line.
[[noreturn]] void failDump(const std::string& path, const std::string& what);
// `s` as it may appear in a message: at most 64 characters, escaped.
std::string shownText(std::string_view s);

// Note [Dump ranges] (dump_fields.cpp): global ranks and sequence numbers.
inline constexpr int64_t kMaxDumpRank = (int64_t{1} << 20) - 1;
inline constexpr int64_t kMaxDumpSeq = int64_t{1} << 53;

// Typed fields with the checks and messages of distlab's own dumps, for the
// readers of other formats (torch_dump_reader.cpp). Each throws as above.
const nlohmann::json& dumpRequired(const nlohmann::json& obj, const char* name, const DumpSite& s);
int64_t dumpInteger(
    const nlohmann::json& obj, const char* name, const DumpSite& s, int64_t lo, int64_t hi);
// `fallback` when the field is missing or null.
int64_t dumpOptionalInteger(const nlohmann::json& obj,
                            const char* name,
                            const DumpSite& s,
                            int64_t lo,
                            int64_t hi,
                            int64_t fallback);
std::string dumpString(const nlohmann::json& obj, const char* name, const DumpSite& s);
bool dumpBool(const nlohmann::json& obj, const char* name, const DumpSite& s);
// Shapes: sizes in [0, 2^63) whose product fits int64.
std::vector<std::vector<int64_t>> dumpShapes(const nlohmann::json& obj,
                                             const char* name,
                                             const DumpSite& s);
std::vector<std::string> dumpStrings(const nlohmann::json& obj,
                                     const char* name,
                                     const DumpSite& s);
// The optional fields only `--export-torch` carries over (record_id, op_id,
// the times, timeout_ms, reduce_op), into `d`.
void readExportFields(const nlohmann::json& e, const DumpSite& s, DumpEntry& d);
// `v` as a message shows it: compact JSON, at most 64 characters.
std::string shownJson(const nlohmann::json& v);

// The op names the writer writes (comm::opTypeName of every OpType).
bool isKnownOpType(std::string_view name);
// The one dump version this reader understands ("2.4-distlab").
std::string_view knownDumpVersion();

DumpEntry readEntry(const nlohmann::json& e, const DumpSite& site);
// Ranks are checked for range and repeats; whether they hold the dump's own
// rank is the caller's check (the rank may come later in the file).
DumpGroup readGroupConfig(const std::string& name, const nlohmann::json& cfg, const DumpSite& site);
// The last_*_collective counters of pg_status into `g`.
void readGroupStatus(const nlohmann::json& status, const DumpSite& site, DumpGroup& g);
// 'version' first (a dump of another version may differ everywhere else).
void checkDumpVersion(const nlohmann::json& top, const DumpSite& site);
// rank, trigger and reason.
void readTopLevel(const nlohmann::json& top, const DumpSite& site, RankDump& d);

}  // namespace distlab::emulator
