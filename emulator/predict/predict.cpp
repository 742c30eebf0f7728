// `distlab predict` (predict.hpp): replay per world size, step statistics,
// the table, the JSON and the timeline.
#include "emulator/predict/predict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <ostream>
#include <set>

#include "emulator/predict/trace_program.hpp"
#include "emulator/trace/overlap_metrics.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;

constexpr int kTimelineRanks = 8;

double overlapOf(double b, double e, double from, double to) {
  return std::max(0.0, std::min(e, to) - std::max(b, from));
}

// Within [b, e): the rank's compute, and its blocked time split at each
// awaited collective's start: before it, the rank waited for a slower rank
// (or its stream); after it, for the network (exposed communication).
struct Split {
  double compute = 0, imbalance = 0, exposed = 0;
};
Split splitWithin(const SimResult& r, int rank, double b, double e) {
  Split out;
  for (const auto& s : r.ranks[rank].spans) {
    if (s.collective < 0) {
      out.compute += overlapOf(b, e, s.beginS, s.endS);
      continue;
    }
    const double start = std::clamp(r.collectives[s.collective].startS, s.beginS, s.endS);
    out.imbalance += overlapOf(b, e, s.beginS, start);
    out.exposed += overlapOf(b, e, start, s.endS);
  }
  return out;
}

// |union of the collectives' [start, end) within [b, e)|.
double commWithin(const SimResult& r, double b, double e) {
  std::vector<Interval> spans;
  for (const auto& c : r.collectives) {
    spans.push_back({std::max(b, c.startS), std::min(e, c.endS)});
  }
  return measure(unite(spans));
}

struct Step {
  double b, e;
  int rank;
};

// The step spans of the slowest rank, per step index.
std::vector<Step> slowestSteps(const SimResult& r) {
  std::vector<Step> steps;
  for (size_t rank = 0; rank < r.ranks.size(); ++rank) {
    const auto& m = r.ranks[rank].marks;
    const auto b = m.find("step begin"), e = m.find("step end");
    if (b == m.end() || e == m.end()) continue;
    for (size_t s = 0; s < std::min(b->second.size(), e->second.size()); ++s) {
      if (steps.size() <= s) steps.push_back({0, 0, -1});
      if (steps[s].rank < 0 || e->second[s] - b->second[s] > steps[s].e - steps[s].b) {
        steps[s] = {b->second[s], e->second[s], static_cast<int>(rank)};
      }
    }
  }
  return steps;
}

// Note [Critical path]
// Walked back from the slowest rank's end of the step: a compute span of the
// rank is on the path; a wait for collective c puts c's run on the path (and
// the time it queued behind its stream after its last issue), then the path
// continues on the rank whose issue came last, at that issue. It ends at the
// step's begin. Waiting for a slower rank never appears: the path moves to
// that rank instead.
CriticalPath criticalPath(const SimInput& in, const SimResult& r, int rank, double b, double e) {
  CriticalPath path;
  double t = e;
  std::set<int> ranks{rank};
  while (t > b + 1e-12) {
    const auto& spans = r.ranks[rank].spans;
    const auto it = std::find_if(spans.rbegin(), spans.rend(),
                                 [&](const SimRankResult::Span& s) { return s.beginS < t - 1e-12; });
    if (it == spans.rend()) break;  // zero-length actions only before t
    if (it->collective < 0) {
      path.computeS += std::min(t, it->endS) - std::max(b, it->beginS);
      t = it->beginS;
      continue;
    }
    const SimCollectiveResult& c = r.collectives[it->collective];
    const double from = std::max(b, c.issuedS);
    path.commS += std::min(t, c.endS) - from;
    path.collectives.push_back(in.collectives[it->collective].name);
    t = from;
    if (c.lastIssuer >= 0) rank = c.lastIssuer;
    ranks.insert(rank);
  }
  path.ranks.assign(ranks.begin(), ranks.end());
  return path;
}

PredictRow rowOf(int world, const SimInput& in, const SimResult& r, const TracedRun& run) {
  const std::vector<Step> steps = slowestSteps(r);
  const size_t skip = steps.size() > static_cast<size_t>(kWarmupSteps) ? kWarmupSteps : 0;
  PredictRow row{world, static_cast<int>(steps.size() - skip)};
  for (size_t s = skip; s < steps.size(); ++s) {
    const Step& st = steps[s];
    const Split split = splitWithin(r, st.rank, st.b, st.e);
    row.stepS += st.e - st.b;
    row.computeS += split.compute;
    row.exposedS += split.exposed;
    row.imbalanceS += split.imbalance;
    row.commS += commWithin(r, st.b, st.e);
    if (s + 1 == steps.size()) row.lastStepPath = criticalPath(in, r, st.rank, st.b, st.e);
    if (s < run.tracedStepS.size()) row.tracedStepS += run.tracedStepS[s];
  }
  if (row.steps > 0) {
    for (double* v : {&row.stepS, &row.computeS, &row.exposedS, &row.imbalanceS, &row.commS,
                      &row.tracedStepS}) {
      *v /= row.steps;
    }
  }
  return row;
}

// The collectives that started in the last step of the slowest rank.
json lastStepTable(const SimInput& in, const SimResult& r) {
  const std::vector<Step> steps = slowestSteps(r);
  json rows = json::array();
  if (steps.empty()) return rows;
  const Step& last = steps.back();
  for (size_t c = 0; c < r.collectives.size(); ++c) {
    const SimCollectiveResult& cr = r.collectives[c];
    if (cr.startS < last.b || cr.startS >= last.e) continue;
    const SimCollective& sc = in.collectives[c];
    rows.push_back({{"name", sc.name},
                    {"op", std::string(comm::opTypeName(sc.op))},
                    {"bytes", sc.bytes},
                    {"ranks", sc.ranks.size()},
                    {"algorithm", std::string(algorithmName(cr.cost.algorithm))},
                    {"alone_s", cr.cost.seconds()},
                    {"replay_s", cr.endS - cr.startS},
                    {"queued_s", cr.startS - cr.issuedS}});
  }
  return rows;
}

void printRow(std::ostream& out, const PredictRow& row) {
  out << fmt::format("{:>8} {:>6} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f} {:>9.1f}% {:>12.3f}\n",
                     row.worldSize, row.steps, row.stepS * 1e3, row.computeS * 1e3,
                     row.commS * 1e3, row.exposedS * 1e3,
                     row.stepS > 0 ? 100 * row.exposedS / row.stepS : 0.0,
                     row.imbalanceS * 1e3);
}

void printTable(std::ostream& out, const json& table, int world) {
  out << fmt::format("# last step at world {}: collectives\n", world);
  out << fmt::format("{:>40} {:>12} {:>13} {:>11} {:>11} {:>11}\n", "collective", "bytes",
                     "algorithm", "alone ms", "replay ms", "queued ms");
  for (const json& row : table) {
    out << fmt::format("{:>40} {:>12} {:>13} {:>11.3f} {:>11.3f} {:>11.3f}\n",
                       row["name"].get<std::string>(), row["bytes"].get<int64_t>(),
                       row["algorithm"].get<std::string>(), row["alone_s"].get<double>() * 1e3,
                       row["replay_s"].get<double>() * 1e3, row["queued_s"].get<double>() * 1e3);
  }
}

// The replay of the first ranks as a Chrome trace: compute and waits on a
// "compute" track, the collectives on a "comm" track.
void writeTimeline(const std::string& path, const SimInput& in, const SimResult& r) {
  json events = json::array();
  const int ranks = std::min<int>(kTimelineRanks, static_cast<int>(r.ranks.size()));
  for (int rank = 0; rank < ranks; ++rank) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", rank},
                      {"args", {{"name", fmt::format("rank {} (predicted)", rank)}}}});
    for (const auto& s : r.ranks[rank].spans) {
      const bool compute = s.collective < 0;
      events.push_back({{"ph", "X"}, {"cat", compute ? "compute" : "wait"}, {"pid", rank},
                        {"tid", 0}, {"ts", s.beginS * 1e6}, {"dur", (s.endS - s.beginS) * 1e6},
                        {"name", compute ? "busy" : "wait " + in.collectives[s.collective].name}});
    }
    for (size_t c = 0; c < r.collectives.size(); ++c) {
      const auto& sc = in.collectives[c];
      if (std::find(sc.ranks.begin(), sc.ranks.end(), rank) == sc.ranks.end()) continue;
      const auto& cr = r.collectives[c];
      events.push_back({{"ph", "X"}, {"cat", "comm"}, {"pid", rank}, {"tid", 1},
                        {"ts", cr.startS * 1e6}, {"dur", (cr.endS - cr.startS) * 1e6},
                        {"name", sc.name},
                        {"args", {{"bytes", sc.bytes},
                                  {"algorithm", std::string(algorithmName(cr.cost.algorithm))}}}});
    }
  }
  std::ofstream f(path);
  f << json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
  if (!f.flush()) throw Error(fmt::format("predict: cannot write the timeline {}", path));
}

void validate(const PredictOptions& o) {
  if (o.worldSizes.empty()) throw ValueError("predict: give at least one world size (--world)");
}

// An unreadable or unparsable file is bad input (exit 2), not a failure.
TracedRun loadTrace(const std::string& path) {
  json trace;
  try {
    trace = readTraceFile(path);
  } catch (const ValueError&) {
    throw;
  } catch (const Error& e) {
    throw ValueError(fmt::format("predict: {}; give a merged trace (`distlab run --trace`)",
                                 e.what()));
  }
  try {
    return readTracedRun(trace);
  } catch (const std::exception& e) {  // ValueError, or JSON of the wrong shape
    throw ValueError(fmt::format("predict: {}: {}", path, e.what()));
  }
}

}  // namespace

PredictRow predictStep(const TracedRun& run, int worldSize, const NetworkModel& network) {
  const SimInput in = scaleTracedRun(run, worldSize, network.topology, network.algorithm);
  return rowOf(worldSize, in, simulate(in), run);
}

int runPredict(const PredictOptions& o, std::ostream& out) {
  validate(o);
  const TracedRun run = loadTrace(o.tracePath);
  const Topology topology = parseTopology(o.topology);
  out << fmt::format("# distlab predict: {} (traced at world {}), topology {} ({} ranks per "
                     "node, intra {} us / {} GB/s, inter {} us / {} GB/s, oversubscription {})\n",
                     o.tracePath, run.worldSize, topology.name, topology.ranksPerNode,
                     topology.intra.latencyUs, topology.intra.bandwidthGBs,
                     topology.inter.latencyUs, topology.inter.bandwidthGBs,
                     topology.oversubscription);
  out << "# per step after warm-up, on the slowest rank: compute; exposed = waiting for a "
         "started collective; imbalance = waiting for a slower rank to issue one\n";
  out << fmt::format("{:>8} {:>6} {:>12} {:>12} {:>12} {:>12} {:>10} {:>12}\n", "world", "steps",
                     "step ms", "compute ms", "comm ms", "exposed ms", "exposed", "imbalance ms");
  json rows = json::array();
  for (size_t i = 0; i < o.worldSizes.size(); ++i) {
    const int world = o.worldSizes[i];
    const SimInput in = scaleTracedRun(run, world, topology, o.algorithm);
    const SimResult result = simulate(in);
    const PredictRow row = rowOf(world, in, result, run);
    printRow(out, row);
    const json table = lastStepTable(in, result);
    rows.push_back({{"world_size", world}, {"steps", row.steps}, {"step_s", row.stepS},
                    {"compute_s", row.computeS}, {"comm_s", row.commS},
                    {"exposed_s", row.exposedS}, {"imbalance_s", row.imbalanceS},
                    {"traced_step_s", row.tracedStepS}, {"collectives", table},
                    {"critical_path", {{"compute_s", row.lastStepPath.computeS},
                                       {"comm_s", row.lastStepPath.commS},
                                       {"collectives", row.lastStepPath.collectives},
                                       {"ranks", row.lastStepPath.ranks}}}});
    if (i == 0 && !o.timelinePath.empty()) writeTimeline(o.timelinePath, in, result);
  }
  for (const json& row : rows) {
    printTable(out, row["collectives"], row["world_size"]);
    const json& p = row["critical_path"];
    out << fmt::format("# critical path of that step: {:.3f} ms compute, {:.3f} ms in {} "
                       "collective(s), through rank(s) {}\n",
                       p["compute_s"].get<double>() * 1e3, p["comm_s"].get<double>() * 1e3,
                       p["collectives"].size(), p["ranks"].dump());
  }
  if (!o.jsonPath.empty()) {
    json j{{"trace", o.tracePath}, {"traced_world_size", run.worldSize},
           {"topology", o.topology}, {"algorithm", std::string(algorithmName(o.algorithm))},
           {"rows", rows}};
    std::ofstream(o.jsonPath) << j.dump(2) << "\n";
  }
  return 0;
}

}  // namespace distlab::emulator
