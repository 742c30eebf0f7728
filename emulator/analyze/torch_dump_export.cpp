#include "emulator/analyze/torch_dump_export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>

#include "emulator/analyze/dump_fields.hpp"
#include "emulator/analyze/pickle_writer.hpp"
#include "emulator/analyze/torch_dump_reader.hpp"
#include "emulator/analyze/torch_names.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;
using Shapes = std::vector<std::vector<int64_t>>;

int64_t elementCount(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A list of tensors as the one flat tensor PyTorch's NCCL group uses in
// their place (Note [PyTorch's dump from distlab's]): [count, *shape] when
// every shape is the same, else one dimension of all their elements.
Shapes flattened(const Shapes& list) {
  if (list.size() <= 1) return list;
  if (std::all_of(list.begin(), list.end(), [&](const auto& s) { return s == list[0]; })) {
    std::vector<int64_t> shape{static_cast<int64_t>(list.size())};
    shape.insert(shape.end(), list[0].begin(), list[0].end());
    return {shape};
  }
  int64_t total = 0;  // each shape's count fits int64 (dump_fields.hpp); their sum may not
  for (const auto& s : list) {
    if (__builtin_add_overflow(total, elementCount(s), &total)) return list;
  }
  return {{total}};
}

json dtypes(const std::vector<std::string>& list, size_t count) {
  json out = json::array();
  for (size_t i = 0; i < std::min(list.size(), count); ++i) out.push_back(torchDtypeName(list[i]));
  return out;
}

json nsOrNone(int64_t ns) { return ns == 0 ? json(nullptr) : json(ns); }

// The position of each global rank in the group's sorted rank list: PyTorch's
// group rank (Note [PyTorch's dump from distlab's]).
struct GroupInfo {
  int pgId = 0;
  std::vector<int> sorted;
  int torchRank(size_t groupRank, const DumpGroup& g) const {
    const int global = g.ranks.at(groupRank);
    return static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), global) -
                            sorted.begin());
  }
};

// Per group, what PyTorch counts while recording (Note [PyTorch's dump from
// distlab's]): the collective sequence number current now, point-to-point
// operations so far.
struct Counters {
  uint64_t collective = 0, p2p = 0;
};

std::string profilingName(const DumpEntry& e,
                          std::string_view op,
                          const DumpGroup& g,
                          const GroupInfo& info,
                          int ownRank) {
  std::string name = fmt::format("nccl:{}", op);
  if (!e.isP2P) return name;
  const int peer = info.torchRank(static_cast<size_t>(e.peer), g);
  return e.opType == "SEND" ? fmt::format("{} {}->{}", name, ownRank, peer)
                            : fmt::format("{} {}<-{}", name, ownRank, peer);
}

std::string torchState(const DumpEntry& e) {
  if (e.state != "failed") return e.state;
  return e.startedNs != 0 ? "started" : "scheduled";
}

json entryOf(const DumpEntry& e,
             std::string_view op,
             const DumpGroup& g,
             const GroupInfo& info,
             int ownRank,
             Counters& c,
             size_t recordId) {
  if (e.isP2P) {
    ++c.p2p;
  } else {
    c.collective = e.collectiveSeq;
  }
  Shapes in = e.inputSizes, out = e.outputSizes;
  if (e.opType == "ALLGATHER") out = flattened(out);
  if (e.opType == "REDUCE_SCATTER") in = flattened(in);
  const std::string state = torchState(e);
  json j{
      {"record_id", recordId},
      {"pg_id", info.pgId},
      {"process_group", json::array({g.name, g.desc})},
      {"collective_seq_id", c.collective},
      {"p2p_seq_id", e.isP2P ? c.p2p : 0},
      {"op_id", e.opId},
      {"profiling_name", profilingName(e, op, g, info, ownRank)},
      {"time_created_ns", e.createdNs},
      {"input_sizes", in},
      {"input_dtypes", dtypes(e.inputDtypes, in.size())},
      {"output_sizes", out},
      {"output_dtypes", dtypes(e.outputDtypes, out.size())},
      {"state", state},
      {"time_discovered_started_ns", state == "scheduled" ? json(nullptr) : nsOrNone(e.startedNs)},
      {"time_discovered_completed_ns",
       state == "completed" ? nsOrNone(e.completedNs) : json(nullptr)},
      {"retired", e.state == "completed" || e.state == "failed"},
      {"timeout_ms", e.timeoutMs},
      {"is_p2p", e.isP2P},
      {"thread_name", ""},
      {"thread_id", ""},
      {"frames", json::array()}};
  // distlab's own, which PyTorch's analyzer ignores and distlab reads back.
  if (!e.reduceOp.empty()) j["reduce_op"] = e.reduceOp;
  if (!e.isP2P && e.peer >= 0) j["root"] = info.torchRank(static_cast<size_t>(e.peer), g);
  if (e.completedNs != 0 && e.startedNs != 0 && state == "completed") {
    j["duration_ms"] = static_cast<double>(e.completedNs - e.startedNs) / 1e6;
  }
  return j;
}

std::string pythonListText(const std::vector<int>& ranks) {
  return fmt::format("[{}]", fmt::join(ranks, ", "));  // Python's str() of the list
}

}  // namespace

json torchDumpOf(const RankDump& dump) {
  std::map<std::string, GroupInfo> info;
  json config = json::object(), status = json::object();
  for (const auto& [name, g] : dump.groups) {  // sorted by name: pg_id in that order
    GroupInfo& gi = info[name];
    gi.pgId = static_cast<int>(info.size()) - 1;
    gi.sorted = g.ranks;
    std::sort(gi.sorted.begin(), gi.sorted.end());
    config[name] = {{"name", name}, {"desc", g.desc}, {"ranks", pythonListText(gi.sorted)}};
    status[std::to_string(gi.pgId)] = {{"last_enqueued_collective", g.lastEnqueued},
                                       {"last_started_collective", g.lastStarted},
                                       {"last_completed_collective", g.lastCompleted}};
  }
  std::vector<const DumpEntry*> order;
  for (const auto& e : dump.entries) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const DumpEntry* a, const DumpEntry* b) {
    return a->recordId < b->recordId;
  });
  std::map<std::string, Counters> counters;
  json entries = json::array();
  for (const DumpEntry* e : order) {
    const auto op = torchOpName(e->opType);
    if (!op) continue;
    const DumpGroup& g = dump.groups.at(e->group);
    const GroupInfo& gi = info.at(e->group);
    const auto own = std::find(g.ranks.begin(), g.ranks.end(), dump.rank) - g.ranks.begin();
    entries.push_back(entryOf(*e, *op, g, gi, gi.torchRank(static_cast<size_t>(own), g),
                              counters[e->group], entries.size()));
  }
  return {{"version", kTorchDumpVersion}, {"comm_lib_version", "distlab"},
          {"pg_config", config},          {"pg_status", status},
          {"entries", entries},           {"rank", dump.rank}};
}

namespace {

// Creates `dir` and proves it writable before anything is written.
void prepareExportDir(const std::string& dir) {
  const auto fail = [&](const std::string& what) {
    throw ValueError(
        fmt::format("analyze: --export-torch {}: {}; expected a folder that can be "
                    "created and written (choose another path or fix its "
                    "permissions)",
                    dir, what));
  };
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(fmt::format("cannot create the folder ({})", ec.message()));
  if (!std::filesystem::is_directory(dir, ec)) fail("is not a folder");
  const std::string probe = dir + "/.distlab_export_probe";
  if (!std::ofstream(probe)) fail("cannot write into the folder");
  std::filesystem::remove(probe, ec);
}

}  // namespace

std::vector<std::string> exportTorchDumps(const std::vector<std::string>& dumps,
                                          const std::string& dir,
                                          const std::string& prefix) {
  if (dumps.empty()) throw ValueError("analyze: no dump files given");
  if (prefix.find('/') != std::string::npos ||
      (!prefix.empty() && std::isdigit(static_cast<unsigned char>(prefix.back())))) {
    throw ValueError(
        fmt::format("analyze: export prefix '{}' must be a file name not ending in a "
                    "digit: the rank follows it",
                    prefix));
  }
  std::map<int, std::string> pickles;  // rank -> bytes
  std::map<int, std::string> source;
  for (const auto& path : dumps) {
    RankDump d = readAnyDumpFile(path);
    if (!source.emplace(d.rank, path).second) {
      throw ValueError(fmt::format("analyze: {} and {} are both dumps of rank {}", source[d.rank],
                                   path, d.rank));
    }
    pickles[d.rank] = toPickle(torchDumpOf(d));
  }
  prepareExportDir(dir);
  std::vector<std::string> written;
  for (const auto& [rank, bytes] : pickles) {
    const std::string path = fmt::format("{}/{}{}", dir, prefix, rank);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
      throw ValueError(fmt::format("analyze: --export-torch {}: cannot write {}", dir, path));
    }
    written.push_back(path);
  }
  return written;
}

}  // namespace distlab::emulator
