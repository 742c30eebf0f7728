#include "emulator/trace/scenario_overlap.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "emulator/trace/trace_merge.hpp"

namespace distlab::emulator {

std::optional<ScenarioTrace> collectScenarioTrace(const Scenario& s, const std::string& dir,
                                                  const std::vector<RankEvents>& events) {
  std::vector<RankTraceInput> inputs;
  bool any = false;
  for (int r = 0; r < s.worldSize; ++r) {
    RankTraceInput in;
    in.rank = r;
    in.path = fmt::format("{}/rank{}.trace.json", dir, r);
    any = any || std::filesystem::exists(in.path);
    if (static_cast<size_t>(r) < events.size()) {
      for (const auto& [us, text] : events[r].faults) in.wallInstants.emplace_back(us, "fault " + text);
    }
    inputs.push_back(std::move(in));
  }
  if (!any) return std::nullopt;
  ScenarioTrace t;
  t.merged = mergeRankTraces(inputs, {{"scenario", s.name}, {"file", s.path}});
  t.steps = stepOverlaps(t.merged);
  t.byRank = summarizeByRank(t.steps);
  return t;
}

std::vector<std::string> checkOverlapExpectations(const Scenario& s,
                                                  const std::optional<ScenarioTrace>& trace) {
  const OverlapExpectation& o = s.expect.overlap;
  if (!o.any()) return {};
  if (!trace || trace->byRank.empty()) {
    return {fmt::format("{}: overlap expectations need traced steps after the first, and no "
                        "rank's trace had any",
                        s.path)};
  }
  std::vector<std::string> failures;
  for (const auto& [rank, sum] : trace->byRank) {
    if (o.exposedCommMax && sum.exposedShare() > *o.exposedCommMax) {
      failures.push_back(fmt::format(
          "{}: exposed communication is {:.1f}% of step time on rank {} ({:.3f} of {:.3f} ms "
          "per step), above exposed_comm_max = {}",
          s.path, 100 * sum.exposedShare(), rank, sum.exposedCommUs / sum.steps / 1000,
          sum.meanStepUs() / 1000, *o.exposedCommMax));
    }
    if (o.overlapRatioMin && sum.overlapRatio() < *o.overlapRatioMin) {
      failures.push_back(fmt::format(
          "{}: overlap ratio {:.3f} on rank {} ({:.3f} of {:.3f} ms communication per step "
          "exposed), below overlap_ratio_min = {}",
          s.path, sum.overlapRatio(), rank, sum.exposedCommUs / sum.steps / 1000,
          sum.commUs / sum.steps / 1000, *o.overlapRatioMin));
    }
  }
  return failures;
}

nlohmann::json overlapJson(const std::map<int, OverlapSummary>& byRank) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [rank, s] : byRank) {
    const double n = s.steps > 0 ? s.steps : 1;
    out.push_back({{"rank", rank},
                   {"steps", s.steps},
                   {"step_ms", s.stepUs / n / 1000},
                   {"compute_ms", s.computeUs / n / 1000},
                   {"comm_ms", s.commUs / n / 1000},
                   {"exposed_comm_ms", s.exposedCommUs / n / 1000},
                   {"overlap_ratio", s.overlapRatio()},
                   {"compute_share", s.computeShare()},
                   {"exposed_share", s.exposedShare()}});
  }
  return out;
}

}  // namespace distlab::emulator
