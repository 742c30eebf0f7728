#include "emulator/analyze/torch_dump_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "emulator/analyze/dump_fields.hpp"
#include "emulator/analyze/pickle_reader.hpp"
#include "emulator/analyze/torch_names.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

// "2.7" -> ok; the analysis reads every minor of major 2.
void checkTorchVersion(const json& top, const DumpSite& s) {
  const json& v = dumpRequired(top, "version", s);
  const std::string text = v.is_string() ? v.get<std::string>() : std::string();
  const size_t dot = text.find('.');
  const bool numeric =
      dot != std::string::npos && allDigits(text.substr(0, dot)) && allDigits(text.substr(dot + 1));
  if (!numeric || text.substr(0, dot) != "2") {
    failDump(s.path, fmt::format("{}: 'version' = {} is not a PyTorch dump version this reader "
                                 "knows; expected \"2.<minor>\" (two integers, as PyTorch 2.x "
                                 "writes it)",
                                 s.where, shownJson(v)));
  }
}

// pg_config's 'ranks': the text of a Python list ("[0, 1, 2]"), as PyTorch
// writes it, or a list.
std::vector<int> groupRanks(const json& cfg, const DumpSite& s) {
  const json& v = dumpRequired(cfg, "ranks", s);
  json list = v;
  if (v.is_string()) {
    std::string text = v.get<std::string>();
    std::replace(text.begin(), text.end(), '(', '[');  // a tuple's text reads the same
    std::replace(text.begin(), text.end(), ')', ']');
    list = json::parse(text, nullptr, false);
  }
  if (!list.is_array()) {
    failDump(s.path, fmt::format("{}: 'ranks' = {} is not a list of global ranks; expected e.g. "
                                 "\"[0, 1, 2]\"",
                                 s.where, shownJson(v)));
  }
  std::vector<int> ranks;
  for (size_t i = 0; i < list.size(); ++i) {
    const json wrapped{{"ranks", list[i]}};
    ranks.push_back(static_cast<int>(
        dumpInteger(wrapped, "ranks", DumpSite{s.path, fmt::format("{} (item {})", s.where, i)}, 0,
                    kMaxDumpRank)));
  }
  std::sort(ranks.begin(), ranks.end());
  if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) {
    failDump(s.path, fmt::format("{}: a rank appears twice in 'ranks'", s.where));
  }
  return ranks;
}

// pg_status counters: integers in the pickle, their text in the JSON form.
uint64_t statusCounter(const json& status, const char* name, const DumpSite& s) {
  auto it = status.find(name);
  if (it == status.end() || it->is_null()) return 0;
  if (it->is_string() && allDigits(it->get<std::string>()) && it->get<std::string>().size() < 16) {
    return std::stoull(it->get<std::string>());
  }
  return static_cast<uint64_t>(dumpInteger(status, name, s, 0, kMaxDumpSeq));
}

struct ParsedName {
  std::string op;    // "send"
  std::string meta;  // "0->2", or empty
};

ParsedName splitProfilingName(const std::string& name, const DumpSite& s) {
  const size_t colon = name.find(':');
  if (colon == std::string::npos || colon == 0) {
    failDump(s.path, fmt::format("{}: 'profiling_name' = \"{}\" has no backend; expected "
                                 "\"<backend>:<op>\" such as \"nccl:all_reduce\"",
                                 s.where, shownText(name)));
  }
  const std::string rest = name.substr(colon + 1);
  const size_t space = rest.find(' ');
  if (space == std::string::npos) return {rest, ""};
  return {rest.substr(0, space), rest.substr(space + 1)};
}

// The peer of a send ("<src>-><dst>") or recv ("<dst><-<src>"), group ranks.
int p2pPeer(const ParsedName& n,
            const std::string& profilingName,
            bool send,
            int groupSize,
            const DumpSite& s) {
  const std::string sep = send ? "->" : "<-";
  const size_t at = n.meta.find(sep);
  const std::string own = at == std::string::npos ? "" : n.meta.substr(0, at);
  const std::string peer = at == std::string::npos ? "" : n.meta.substr(at + 2);
  if (!allDigits(own) || !allDigits(peer) || peer.size() > 7 || std::stoi(peer) >= groupSize) {
    failDump(s.path, fmt::format("{}: 'profiling_name' = \"{}\" does not name its peer in a group "
                                 "of {} ranks; expected \"nccl:{} {}\"",
                                 s.where, shownText(profilingName), groupSize, n.op,
                                 send ? "0->1" : "1<-0"));
  }
  return std::stoi(peer);
}

// An all_gather into one flat tensor of world times the input: world outputs
// of the input's shape (Note [Reading PyTorch's dumps]).
void unflattenAllGather(DumpEntry& d, size_t world) {
  if (d.opType != "ALLGATHER" || d.inputSizes.size() != 1 || d.outputSizes.size() != 1 ||
      world < 2) {
    return;
  }
  int64_t in = 1, out = 1;
  for (int64_t x : d.inputSizes[0]) in *= x;
  for (int64_t x : d.outputSizes[0]) out *= x;
  int64_t expected = 0;  // shapes are checked to fit int64; world times may not
  if (__builtin_mul_overflow(in, static_cast<int64_t>(world), &expected) || out != expected) {
    return;
  }
  d.outputSizes.assign(world, d.inputSizes[0]);
  if (d.outputDtypes.size() == 1) d.outputDtypes.assign(world, d.outputDtypes[0]);
}

class TorchDumpReader {
 public:
  explicit TorchDumpReader(const std::string& path) : path_(path) { dump_.path = path; }
  RankDump read(const json& top);

 private:
  void readGroups(const json& top);
  void readEntries(const json& list);
  void readStatus(const json& top);
  std::optional<DumpEntry> readEntry(const json& e, const DumpSite& s);
  size_t readGroupOf(const json& e, const DumpSite& s, DumpEntry& d);
  std::optional<ParsedName> readOp(const json& e, const DumpSite& s, DumpEntry& d);
  void readTensors(const json& e, const DumpSite& s, DumpEntry& d);

  const std::string& path_;
  RankDump dump_;
  std::map<int64_t, std::string> pgNames_;  // pg_id -> group
  std::map<std::tuple<std::string, int, bool>, uint64_t> p2pCount_;
};

void TorchDumpReader::readGroups(const json& top) {
  const json& cfg = dumpRequired(top, "pg_config", DumpSite{path_, "top level"});
  if (!cfg.is_object()) {
    failDump(path_, fmt::format("top level: 'pg_config' = {} is not a dict of groups; expected "
                                "{{<name>: {{name, desc, ranks}}}}",
                                shownJson(cfg)));
  }
  for (const auto& [name, g] : cfg.items()) {
    const DumpSite s{path_, fmt::format("pg_config '{}'", shownText(name))};
    if (!g.is_object())
      failDump(path_, fmt::format("{} is not a dict; expected {{name, desc, ranks}}", s.where));
    DumpGroup group;
    group.name = name;
    auto desc = g.find("desc");
    group.desc = desc != g.end() && desc->is_string() ? desc->get<std::string>() : "";
    group.ranks = groupRanks(g, s);
    dump_.groups.emplace(name, std::move(group));
  }
}

// process_group [name, desc]: a group of pg_config; its size.
size_t TorchDumpReader::readGroupOf(const json& e, const DumpSite& s, DumpEntry& d) {
  const json& pg = dumpRequired(e, "process_group", s);
  if (!pg.is_array() || pg.size() != 2 || !pg[0].is_string() || !pg[1].is_string()) {
    failDump(path_, fmt::format("{}: 'process_group' = {} is not [name, desc]; expected two "
                                "strings",
                                s.where, shownJson(pg)));
  }
  d.group = pg[0].get<std::string>();
  auto g = dump_.groups.find(d.group);
  if (g == dump_.groups.end()) {
    failDump(path_, fmt::format("{}: 'process_group' names group '{}', which pg_config does not "
                                "hold",
                                s.where, shownText(d.group)));
  }
  if (e.contains("pg_id") && e["pg_id"].is_number_integer()) {
    pgNames_[e["pg_id"].get<int64_t>()] = d.group;
  }
  return g->second.ranks.size();
}

// profiling_name and is_p2p: the op; nullopt for an entry that is none.
std::optional<ParsedName> TorchDumpReader::readOp(const json& e, const DumpSite& s, DumpEntry& d) {
  d.profilingName = dumpString(e, "profiling_name", s);
  const ParsedName name = splitProfilingName(d.profilingName, s);
  if (torchOpSkipped(name.op)) return std::nullopt;
  const auto opType = opTypeOfTorchName(name.op);
  if (!opType) {
    failDump(path_, fmt::format("{}: 'profiling_name' = \"{}\" names no operation this reader "
                                "knows; expected one of {}",
                                s.where, shownText(d.profilingName), knownTorchOpNames()));
  }
  d.opType = std::string(*opType);
  const bool p2p = d.opType == "SEND" || d.opType == "RECV" || d.opType == "RECVANYSOURCE";
  d.isP2P = e.contains("is_p2p") ? dumpBool(e, "is_p2p", s) : p2p;
  if (d.isP2P != p2p) {
    failDump(path_, fmt::format("{}: 'is_p2p' = {} disagrees with 'profiling_name' = \"{}\"; "
                                "expected is_p2p true exactly for send and recv",
                                s.where, d.isP2P, shownText(d.profilingName)));
  }
  return name;
}

// Sizes, dtypes (as distlab names them) and state.
void TorchDumpReader::readTensors(const json& e, const DumpSite& s, DumpEntry& d) {
  d.inputSizes = dumpShapes(e, "input_sizes", s);
  d.outputSizes = dumpShapes(e, "output_sizes", s);
  for (const auto& t : dumpStrings(e, "input_dtypes", s)) {
    d.inputDtypes.push_back(dtypeOfTorchName(t));
  }
  for (const auto& t : dumpStrings(e, "output_dtypes", s)) {
    d.outputDtypes.push_back(dtypeOfTorchName(t));
  }
  d.state = dumpString(e, "state", s);
  if (d.state != "scheduled" && d.state != "started" && d.state != "completed") {
    failDump(path_, fmt::format("{}: 'state' = \"{}\" is not one of PyTorch's states; expected "
                                "scheduled, started or completed",
                                s.where, shownText(d.state)));
  }
}

std::optional<DumpEntry> TorchDumpReader::readEntry(const json& e, const DumpSite& s) {
  if (!e.is_object()) failDump(path_, fmt::format("{} is not a dict; expected an entry", s.where));
  DumpEntry d;
  const size_t world = readGroupOf(e, s, d);
  const auto name = readOp(e, s, d);
  if (!name) return std::nullopt;
  d.collectiveSeq =
      static_cast<uint64_t>(dumpInteger(e, "collective_seq_id", s, d.isP2P ? 0 : 1, kMaxDumpSeq));
  dumpInteger(e, "p2p_seq_id", s, 0, kMaxDumpSeq);
  readTensors(e, s, d);
  if (d.isP2P) {
    const bool send = d.opType == "SEND";
    d.peer = p2pPeer(*name, d.profilingName, send, static_cast<int>(world), s);
    d.p2pSeq = ++p2pCount_[{d.group, d.peer, send}];  // Note [Reading PyTorch's dumps]
  } else {
    const auto lastRank = static_cast<int64_t>(world) - 1;
    d.peer = static_cast<int>(dumpOptionalInteger(e, "root", s, 0, lastRank, -1));
  }
  if (d.opType == "ALLTOALL" && d.inputSizes.size() <= 1) d.opType = "ALLTOALL_BASE";
  unflattenAllGather(d, world);
  readExportFields(e, s, d);  // reduce_op too, when the export wrote one
  return d;
}

void TorchDumpReader::readEntries(const json& list) {
  if (!list.is_array()) {
    failDump(path_, fmt::format("top level: 'entries' = {} is not a list; expected a list of "
                                "entries",
                                shownJson(list)));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (auto d = readEntry(list[i], DumpSite{path_, fmt::format("entry {}", i)})) {
      dump_.entries.push_back(std::move(*d));
    }
  }
}

// pg_status is keyed by pg_id (its text); a key that is a group's name
// is taken as that group.
void TorchDumpReader::readStatus(const json& top) {
  auto it = top.find("pg_status");
  if (it == top.end() || !it->is_object()) return;
  for (const auto& [key, status] : it->items()) {
    std::string group = key;
    if (allDigits(key) && key.size() < 16 && pgNames_.count(std::stoll(key)))
      group = pgNames_[std::stoll(key)];
    auto g = dump_.groups.find(group);
    if (g == dump_.groups.end() || !status.is_object()) continue;
    const DumpSite s{path_, fmt::format("pg_status '{}'", shownText(key))};
    g->second.lastEnqueued = statusCounter(status, "last_enqueued_collective", s);
    g->second.lastStarted = statusCounter(status, "last_started_collective", s);
    g->second.lastCompleted = statusCounter(status, "last_completed_collective", s);
  }
}

RankDump TorchDumpReader::read(const json& top) {
  if (!top.is_object()) failDump(path_, "not a flight recorder dump (the value is not a dict)");
  const DumpSite s{path_, "top level"};
  checkTorchVersion(top, s);
  dump_.rank = top.contains("rank") ? static_cast<int>(dumpInteger(top, "rank", s, 0, kMaxDumpRank))
                                    : rankFromFileName(path_);
  if (dump_.rank < 0) {
    failDump(path_,
             "the file name does not end in the rank and the dump holds none; expected "
             "PyTorch's naming, <prefix><rank> (e.g. fr_rank_3): rename the file");
  }
  readGroups(top);
  auto entries = top.find("entries");  // the JSON form leaves out an empty list
  if (entries != top.end()) readEntries(*entries);
  readStatus(top);
  dump_.trigger = "pytorch";
  return std::move(dump_);
}

// PyTorch's JSON dump as a tree, within the caps of Note [Dump caps].
json parseTorchJson(const std::string& text, const std::string& path) {
  size_t values = 0;
  const json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json&) {
    if (static_cast<size_t>(depth) > kMaxDumpDepth) {
      failDump(path, fmt::format("nested deeper than {} arrays/objects; a dump nests 5 deep",
                                 kMaxDumpDepth));
    }
    if (event == json::parse_event_t::value && ++values > kMaxDumpValues) {
      failDump(path, fmt::format("more than {} values in the file; expected at most that many "
                                 "in a dump",
                                 kMaxDumpValues));
    }
    return true;
  };
  try {
    return json::parse(text, cb);
  } catch (const json::parse_error& e) {
    failDump(path, fmt::format("not valid JSON (byte {})", e.byte));
  }
}

}  // namespace

DumpFormat detectDumpFormat(std::string_view bytes) {
  if (looksLikePickle(bytes)) return DumpFormat::kTorchPickle;
  const size_t at = bytes.rfind("\"version\"");
  if (at == std::string_view::npos) return DumpFormat::kDistlab;
  size_t p = at + 9;
  while (p < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[p]))) ++p;
  if (p >= bytes.size() || bytes[p] != ':') return DumpFormat::kDistlab;
  ++p;
  while (p < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[p]))) ++p;
  if (p >= bytes.size() || bytes[p] != '"') return DumpFormat::kDistlab;
  const size_t end = bytes.find('"', p + 1);
  if (end == std::string_view::npos) return DumpFormat::kDistlab;
  const std::string_view v = bytes.substr(p + 1, end - p - 1);
  return v.starts_with("2.") && allDigits(v.substr(2)) ? DumpFormat::kTorchJson
                                                       : DumpFormat::kDistlab;
}

int rankFromFileName(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (const char* ext : {".json", ".pkl", ".pickle"}) {
    if (name.ends_with(ext)) name.resize(name.size() - std::string_view(ext).size());
  }
  size_t start = name.size();
  while (start > 0 && std::isdigit(static_cast<unsigned char>(name[start - 1]))) --start;
  const std::string digits = name.substr(start);
  if (digits.empty() || digits.size() > 7) return -1;
  const int rank = std::stoi(digits);
  return rank <= kMaxDumpRank ? rank : -1;
}

RankDump parseTorchDump(const json& top, const std::string& path) {
  return TorchDumpReader(path).read(top);
}

RankDump readAnyDumpFile(const std::string& path) {
  std::ifstream in = openDumpFile(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  switch (detectDumpFormat(text)) {
    case DumpFormat::kTorchPickle:
      return parseTorchDump(fromPickle(text, path), path);
    case DumpFormat::kTorchJson:
      return parseTorchDump(parseTorchJson(text, path), path);
    case DumpFormat::kDistlab:
      break;
  }
  return parseDump(text, path);
}

}  // namespace distlab::emulator
