#include "emulator/analyze/dump_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "emulator/analyze/dump_fields.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;

// Note [Streaming the dump]
// A dump is parsed through nlohmann's SAX interface, never as one JSON tree.
// The top level's sections (pg_config and pg_status: objects of groups;
// entries: an array) are not built at all: each record in them (a group, an
// entry) is built alone and converted by dump_fields.cpp when it closes, then
// dropped. The other top-level fields (version, rank, ...) are small and kept
// until the end. A record's error is held until the end, so that an unknown
// 'version' (written last: the writer's keys are sorted) is the error
// reported. Every value counts toward the caps of Note [Dump caps].
enum class Role { kTop, kSection, kRecord, kValue };

struct Frame {
  Role role;
  bool isArray;
  json* node;       // the JSON being built; nullptr for a section
  std::string key;  // the key last read (objects)
  size_t items;     // values begun so far (arrays)
};

// What a section of the top level must be; nullopt for other fields.
std::optional<json::value_t> sectionType(const std::string& key) {
  if (key == "pg_config" || key == "pg_status") return json::value_t::object;
  if (key == "entries") return json::value_t::array;
  return std::nullopt;
}

std::string typeName(json::value_t t) { return json(t).type_name(); }

class DumpSax {
 public:
  explicit DumpSax(const std::string& path) : path_(path) { dump_.path = path; }

  // The SAX interface (nlohmann::json_sax).
  bool null() { return scalar(nullptr); }
  bool boolean(bool v) { return scalar(v); }
  bool number_integer(json::number_integer_t v) { return scalar(v); }
  bool number_unsigned(json::number_unsigned_t v) { return scalar(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return scalar(v); }
  bool string(json::string_t& v) { return scalar(std::move(v)); }
  bool binary(json::binary_t& v) { return scalar(std::move(v)); }
  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool key(json::string_t& k);
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const json::exception& e);

  // After the whole text was parsed: the checks across records.
  RankDump finish();

 private:
  bool scalar(json v);
  bool open(json::value_t type);
  bool close();
  void countValue();
  Role childRole(json::value_t type) const;
  json* place(json v);
  std::string recordWhere() const;
  void endRecord();
  void convertRecord(const std::string& section, const DumpSite& site);
  void finishGroup(DumpGroup& g) const;
  std::string spot() const;
  [[noreturn]] void failAt(const std::string& what) const;

  const std::string& path_;
  std::vector<Frame> frames_;
  json top_ = json::object();
  json record_;
  size_t values_ = 0;
  std::set<std::string> topKeys_;
  std::optional<std::string> firstError_;
  std::map<std::string, DumpGroup> statuses_;  // counters only
  RankDump dump_;
};

bool DumpSax::key(json::string_t& k) {
  Frame& f = frames_.back();
  if (f.role == Role::kTop && !topKeys_.insert(k).second) {
    failDump(path_, fmt::format("top level: '{}' appears twice", shownText(k)));
  }
  f.key = k;
  return true;
}

bool DumpSax::parse_error(std::size_t, const std::string&, const json::exception& e) {
  // Drops the "[json.exception.parse_error.101] " id: the text is for people.
  std::string what = e.what();
  const size_t idEnd = what.find("] ");
  if (what.rfind("[json.", 0) == 0 && idEnd != std::string::npos) what.erase(0, idEnd + 2);
  const std::string where = spot();
  failDump(path_,
           fmt::format("not valid JSON{} ({})", where.empty() ? "" : " near " + where, what));
}

bool DumpSax::scalar(json v) {
  countValue();
  childRole(v.type());
  place(std::move(v));
  return true;
}

bool DumpSax::open(json::value_t type) {
  countValue();
  if (frames_.size() >= kMaxDumpDepth) {
    failAt(fmt::format("nested deeper than {} arrays/objects; a dump nests 5 deep", kMaxDumpDepth));
  }
  const Role role = childRole(type);
  json* node = nullptr;
  if (role == Role::kTop) {
    node = &top_;
  } else if (role == Role::kRecord) {
    record_ = json::object();
    node = &record_;
  } else if (role == Role::kValue) {
    node = place(json(type));
  }
  frames_.push_back({role, type == json::value_t::array, node, {}, 0});
  return true;
}

bool DumpSax::close() {
  if (frames_.back().role == Role::kRecord) endRecord();
  frames_.pop_back();
  return true;
}

void DumpSax::countValue() {
  if (++values_ > kMaxDumpValues) {
    failAt(fmt::format("more than {} values in the file; expected at most that many in a dump",
                       kMaxDumpValues));
  }
  if (!frames_.empty() && frames_.back().isArray && ++frames_.back().items > kMaxDumpListLength) {
    failAt(fmt::format("more than {} items in one array; expected at most that many",
                       kMaxDumpListLength));
  }
}

// Throws for a value the schema forbids where it sits: a top level that is
// not an object, a section or record of the wrong type.
Role DumpSax::childRole(json::value_t type) const {
  if (frames_.empty()) {
    if (type != json::value_t::object) {
      failDump(path_, "not a flight recorder dump (top level is not an object)");
    }
    return Role::kTop;
  }
  const Frame& f = frames_.back();
  if (f.role == Role::kTop) {
    const auto want = sectionType(f.key);
    if (!want) return Role::kValue;
    if (type != *want) {
      failDump(path_, fmt::format("top level: '{}' has the wrong type ({}); expected an {}", f.key,
                                  typeName(type), typeName(*want)));
    }
    return Role::kSection;
  }
  if (f.role != Role::kSection) return Role::kValue;
  if (type != json::value_t::object) {
    failDump(path_, fmt::format("{} has the wrong type ({}); expected an object", recordWhere(),
                                typeName(type)));
  }
  return Role::kRecord;
}

// Adds `v` to the JSON being built (a top-level field or inside a record).
json* DumpSax::place(json v) {
  Frame& parent = frames_.back();
  if (parent.isArray) {
    parent.node->push_back(std::move(v));
    return &parent.node->back();
  }
  json& slot = (*parent.node)[parent.key];
  slot = std::move(v);
  return &slot;
}

// "entry 12" or "pg_config 'g'": the record frames_[1] is in.
std::string DumpSax::recordWhere() const {
  const std::string& section = frames_[0].key;
  if (section == "entries") return fmt::format("entry {}", frames_[1].items - 1);
  return fmt::format("{} '{}'", section, shownText(frames_[1].key));
}

void DumpSax::endRecord() {
  if (!firstError_) {
    try {
      convertRecord(frames_[0].key, DumpSite{path_, recordWhere()});
    } catch (const ValueError& e) {
      firstError_ = e.what();
    }
  }
  record_ = json();
}

void DumpSax::convertRecord(const std::string& section, const DumpSite& site) {
  if (section == "entries") {
    dump_.entries.push_back(readEntry(record_, site));
    return;
  }
  const std::string& name = frames_[1].key;
  DumpGroup g;
  if (section == "pg_config") {
    g = readGroupConfig(name, record_, site);
  } else {
    readGroupStatus(record_, site, g);
  }
  auto& into = section == "pg_config" ? dump_.groups : statuses_;
  if (!into.emplace(name, std::move(g)).second) failDump(path_, site.where + " appears twice");
}

// A group holds the dump's own rank; its pg_status counters join it.
void DumpSax::finishGroup(DumpGroup& g) const {
  if (std::find(g.ranks.begin(), g.ranks.end(), dump_.rank) == g.ranks.end()) {
    const std::string list = g.ranks.size() <= 16 ? fmt::format("[{}]", fmt::join(g.ranks, ","))
                                                  : fmt::format("({} ranks)", g.ranks.size());
    failDump(path_, fmt::format("pg_config '{}': 'ranks' {} does not hold the dump's own rank {}",
                                shownText(g.name), list, dump_.rank));
  }
  auto s = statuses_.find(g.name);
  if (s == statuses_.end()) return;
  g.lastEnqueued = s->second.lastEnqueued;
  g.lastStarted = s->second.lastStarted;
  g.lastCompleted = s->second.lastCompleted;
}

// An entry names a group of pg_config and a peer/root inside it (group rank).
void checkEntryGroup(const RankDump& d, const DumpEntry& e, size_t index) {
  auto g = d.groups.find(e.group);
  if (g == d.groups.end()) {
    failDump(d.path, fmt::format("entry {}: pg_id '{}' is not a group of pg_config", index,
                                 shownText(e.group)));
  }
  const int size = static_cast<int>(g->second.ranks.size());
  if (e.peer < (e.isP2P ? 0 : -1) || e.peer >= size) {
    failDump(d.path, fmt::format("entry {}: 'peer' = {} is out of range for group '{}' of {} "
                                 "ranks (group ranks 0..{})",
                                 index, e.peer, shownText(e.group), size, size - 1));
  }
}

RankDump DumpSax::finish() {
  const DumpSite top{path_, "top level"};
  if (!top_.contains("version") || !topKeys_.count("entries")) {
    failDump(path_, "not a flight recorder dump (no 'version' or 'entries')");
  }
  checkDumpVersion(top_, top);
  if (firstError_) throw ValueError(*firstError_);
  readTopLevel(top_, top, dump_);
  for (auto& [name, g] : dump_.groups) finishGroup(g);
  for (size_t i = 0; i < dump_.entries.size(); ++i) checkEntryGroup(dump_, dump_.entries[i], i);
  return std::move(dump_);
}

// "entries[3].input_sizes[0]": where the parser is, for errors of the JSON.
std::string DumpSax::spot() const {
  std::string out;
  for (const Frame& f : frames_) {
    if (f.isArray && f.items > 0) {
      out += fmt::format("[{}]", f.items - 1);
    } else if (!f.isArray && !f.key.empty()) {
      out += (out.empty() ? "" : ".") + shownText(f.key);
    }
  }
  return out;
}

void DumpSax::failAt(const std::string& what) const {
  const std::string where = spot();
  failDump(path_, where.empty() ? what : where + ": " + what);
}


template <typename Input>
RankDump parseInput(Input&& in, const std::string& path) {
  DumpSax sax(path);
  json::sax_parse(std::forward<Input>(in), &sax);  // errors throw from the handler
  return sax.finish();
}

}  // namespace

void checkDumpSize(uintmax_t bytes, const std::string& path) {
  if (bytes > kMaxDumpBytes) {
    failDump(path, fmt::format("{} bytes is larger than any flight recorder dump; expected at "
                               "most {} bytes",
                               bytes, kMaxDumpBytes));
  }
}

std::ifstream openDumpFile(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) failDump(path, "cannot open the file");
  if (!std::filesystem::is_regular_file(status)) {
    failDump(path, "not a regular file; expected a flight recorder dump");
  }
  const uintmax_t bytes = std::filesystem::file_size(path, ec);
  if (ec) failDump(path, "cannot open the file");
  checkDumpSize(bytes, path);
  std::ifstream in(path, std::ios::binary);
  if (!in) failDump(path, "cannot open the file");
  return in;
}

RankDump parseDump(const std::string& text, const std::string& path) {
  checkDumpSize(text.size(), path);
  return parseInput(text, path);
}

RankDump readDumpFile(const std::string& path) {
  std::ifstream in = openDumpFile(path);
  return parseInput(in, path);
}

}  // namespace distlab::emulator
