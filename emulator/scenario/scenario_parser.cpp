#include "emulator/scenario/scenario_parser.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <sstream>

#include "emulator/scenario/scenario_parts.hpp"
#include "emulator/scenario/toml_reader.hpp"
#include "emulator/workloads/engine_registry.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {

using detail::TomlReader;

std::string outcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kSuccess: return "success";
    case Outcome::kError: return "error";
    case Outcome::kTimeout: return "timeout";
    case Outcome::kHang: return "hang";
  }
  return "?";
}

namespace detail {

void readNetworkKeys(const TomlReader& r, const toml::table& t, NetworkModel& into) {
  const auto read = [&r](const toml::node& node, const char* key, const auto& parse) {
    if (!node.is_string()) r.fail(node, fmt::format("'{}' must be a string", key));
    try {
      return parse(node.as_string()->get());
    } catch (const ValueError& e) {
      r.fail(node, e.what());
    }
  };
  if (const toml::node* topology = t.get("topology")) {
    into.topology = read(*topology, "topology", parseTopology);
  }
  if (const toml::node* algorithm = t.get("collective_algorithm")) {
    into.algorithm = read(*algorithm, "collective_algorithm", parseAlgorithm);
  }
}

}  // namespace detail

namespace {

// The shm backend's segments are laid out for at most 1,024 ranks (its
// kMaxWorldSize); a scenario may ask for as many, on either backend.
constexpr int64_t kMaxScenarioWorldSize = 1024;

// [cluster] topology = "<preset or spec>" and collective_algorithm: the
// network model the link emulator applies (and `distlab predict` replays).
void parseNetwork(const TomlReader& r, const toml::table& c, Scenario& s) {
  const toml::node* topology = c.get("topology");
  const toml::node* algorithm = c.get("collective_algorithm");
  if (!topology) {
    if (algorithm) r.fail(*algorithm, "'collective_algorithm' needs a 'topology' in [cluster]");
    return;
  }
  if (c.get("link")) {
    r.fail(*topology, "give 'link' (one flat link) or 'topology' (the network model), not both");
  }
  NetworkModel network;
  detail::readNetworkKeys(r, c, network);
  s.network = network;
}

void parseCluster(const TomlReader& r, const toml::table& root, Scenario& s) {
  const toml::table* c = r.table(root, "cluster");
  if (!c) r.fail(1, "missing required table [cluster] (world_size, backend, link)");
  r.checkKeys(*c, "[cluster]", {"world_size", "backend", "device", "link", "topology",
                                "collective_algorithm", "timeout", "run_timeout",
                                "teardown_grace"});
  auto ws = r.integer(*c, "world_size");
  if (!ws) r.fail(*c, "missing required key 'world_size' in [cluster]");
  if (*ws < 1 || *ws > kMaxScenarioWorldSize) {
    r.fail(r.lineOfKey(*c, "world_size"),
           fmt::format("'world_size' = {} is out of range [1, {}]: the shm backend's segments "
                       "hold at most {} ranks; use a world size in that range",
                       *ws, kMaxScenarioWorldSize, kMaxScenarioWorldSize));
  }
  s.worldSize = static_cast<int>(*ws);
  if (auto b = r.choice(*c, "backend", {"shm", "gloo", "nccl"})) s.backend = *b;
  if (auto d = r.choice(*c, "device", {"cpu", "cuda"})) s.device = *d;
  if (s.backend == "nccl" && s.device != "cuda") {
    r.fail(r.lineOfKey(*c, "backend"),
           "backend = \"nccl\" serves CUDA tensors only; add device = \"cuda\" to [cluster] "
           "(or use backend = \"shm\" or \"gloo\" for CPU ranks)");
  }
  using detail::NumRange;
  if (auto t = r.number(*c, "timeout", NumRange{0, 600, true, " s"})) s.collectiveTimeoutS = *t;
  if (auto t = r.number(*c, "run_timeout", NumRange{0, 600, true, " s"})) s.runTimeoutS = *t;
  if (auto t = r.number(*c, "teardown_grace", NumRange{0, 60, false, " s"})) {
    s.teardownGraceS = *t;
  }
  if (const toml::node* link = c->get("link")) {
    if (link->is_string()) {
      try {
        s.link = linkPreset(link->as_string()->get());
      } catch (const ValueError& e) {
        r.fail(*link, e.what());
      }
    } else if (link->is_table()) {
      const auto& lt = *link->as_table();
      r.checkKeys(lt, "[cluster.link]", {"latency_us", "bandwidth_gbs"});
      // Bounds: up to 1 s of latency and 10 TB/s, far past any real link, so
      // the delays the link model computes stay small finite durations.
      s.link.latencyUs = r.number(lt, "latency_us", NumRange{0, 1e6, false, " us"}).value_or(0);
      s.link.bandwidthGBs =
          r.number(lt, "bandwidth_gbs", NumRange{0, 1e4, false, " GB/s"}).value_or(0);
      if (!s.link.enabled()) {
        r.fail(*link, "link needs latency_us > 0 or bandwidth_gbs > 0 (or a preset name)");
      }
    } else {
      r.fail(*link, "'link' must be a preset name or a table {latency_us, bandwidth_gbs}");
    }
  }
  parseNetwork(r, *c, s);
}

void parseWorkload(const TomlReader& r, const toml::table& root, const ParseOptions& options,
                   Scenario& s) {
  const toml::table* w = r.table(root, "workload");
  const std::vector<std::string>& given = options.programCommand;
  if (!w && !given.empty()) {
    s.workloadKind = "program";
    s.program.command = given;
    s.program.pos = {r.file(), 1};
    return;
  }
  if (!w) r.fail(1, "missing required table [workload]");
  auto kind = r.choice(*w, "kind", {"collectives", "training", "program"});
  if (!kind) {
    r.fail(*w, "missing required key 'kind' in [workload] (collectives | training | program)");
  }
  s.workloadKind = *kind;
  if (s.workloadKind == "collectives") {
    detail::parseCollectiveWorkload(r, *w, s);
  } else if (s.workloadKind == "training") {
    detail::parseTrainingWorkload(r, *w, s);
  } else {
    detail::parseProgramWorkload(r, *w, s);
  }
  if (given.empty()) return;
  if (s.workloadKind != "program") {
    r.fail(*w, fmt::format("this scenario runs a {} workload, but a program was given to run "
                           "under it; remove [workload] (or use kind = \"program\") to run a "
                           "program under this scenario",
                           s.workloadKind));
  }
  s.program.command = given;
}

// A header string printed on the terminal: no control characters (an escape
// sequence in a name would reach the terminal raw). The description may keep
// line breaks and tabs.
std::string printableHeader(const TomlReader& r, const toml::table& root, const std::string& key,
                            bool allowLayout) {
  const std::string value = r.requireStr(root, key, "the scenario header");
  for (const unsigned char c : value) {
    const bool layout = c == '\n' || c == '\t';
    if ((c < 0x20 || c == 0x7f) && !(allowLayout && layout)) {
      r.fail(r.lineOfKey(root, key),
             fmt::format("'{}' holds a control character (code {}); use printable text", key,
                         static_cast<int>(c)));
    }
  }
  return value;
}

Scenario parseRoot(const TomlReader& r, const toml::table& root, const ParseOptions& options) {
  Scenario s;
  s.path = r.file();
  r.checkKeys(root, "the scenario", {"name", "description", "group", "debug", "trace",
                                     "cluster", "workload", "faults", "expect"});
  s.name = printableHeader(r, root, "name", false);
  s.description = printableHeader(r, root, "description", true);
  s.group = printableHeader(r, root, "group", false);
  if (auto d = r.choice(root, "debug", {"OFF", "INFO", "DETAIL"})) s.debugLevel = *d;
  if (auto t = r.boolean(root, "trace")) s.trace = *t;
  parseCluster(r, root, s);
  parseWorkload(r, root, options, s);
  detail::parseFaults(r, root, s);
  detail::parseExpect(r, root, s);
  return s;
}

}  // namespace

Scenario parseScenarioText(const std::string& text, const std::string& path,
                           const ParseOptions& options) {
  TomlReader reader(path);
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    reader.fail(static_cast<int>(e.source().begin.line),
                fmt::format("TOML syntax error: {}", e.description()));
  }
  return parseRoot(reader, root, options);
}

Scenario parseScenarioFile(const std::string& path, const ParseOptions& options) {
  std::ifstream in(path);
  if (!in) throw ValueError(fmt::format("{}: cannot open scenario file", path));
  std::stringstream buf;
  buf << in.rdbuf();
  return parseScenarioText(buf.str(), path, options);
}

uint64_t worldCollectiveCount(const Scenario& s, int rank) {
  uint64_t n = 0;
  for (const auto& step : s.steps) {
    const auto& mine = step.forRank(rank);
    if (mine.countsOnWorld() && mine.issuedBy(rank)) n += static_cast<uint64_t>(mine.repeat);
  }
  return n;
}

uint64_t pointToPointCount(const Scenario& s, int rank, const std::string& kind, int peer) {
  uint64_t n = 0;
  for (const auto& step : s.steps) {
    const auto& mine = step.forRank(rank);
    // Only the world group's operations reach the fault injector.
    if (mine.op != kind || !mine.group.empty() || !mine.issuedBy(rank)) continue;
    if (peer < 0 || mine.root == peer) n += static_cast<uint64_t>(mine.repeat);
  }
  return n;
}

}  // namespace distlab::emulator
