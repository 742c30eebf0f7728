#include "emulator/scenario/scenario_overlap.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "emulator/predict/predict.hpp"
#include "emulator/predict/trace_program.hpp"
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

namespace {

// launches_in_backward_min, rank by rank: an ordering, so no rank may miss it.
void checkLaunchStructure(const Scenario& s, const ScenarioTrace& trace,
                          std::vector<std::string>& failures) {
  const std::optional<int>& min = s.expect.overlap.launchesInBackwardMin;
  if (!min) return;
  for (const auto& [rank, sum] : trace.byRank) {
    if (sum.minLaunchesInBackward < *min) {
      failures.push_back(fmt::format(
          "{}: rank {} launched only {} bucket(s) before its backward compute ended in some "
          "step, below launches_in_backward_min = {}",
          s.path, rank, sum.minLaunchesInBackward, *min));
    }
    if (sum.maxWaitsInBackward > 0) {
      failures.push_back(fmt::format(
          "{}: rank {} waited for communication {} time(s) before its backward compute ended "
          "in some step (launches_in_backward_min wants no wait there)",
          s.path, rank, sum.maxWaitsInBackward));
    }
  }
}

}  // namespace

std::vector<std::string> checkPredictedExpectations(const Scenario& s,
                                                    const std::optional<ScenarioTrace>& trace) {
  const PredictedExpectation& p = s.expect.predicted;
  if (!p.any()) return {};
  if (!trace) return {fmt::format("{}: [expect.predicted] needs the ranks' traces, and none was "
                                  "written", s.path)};
  PredictRow row;
  try {
    row = predictStep(readTracedRun(trace->merged), p.world, p.network);
  } catch (const std::exception& e) {
    return {fmt::format("{}: [expect.predicted]: the trace could not be replayed: {}", s.path,
                        e.what())};
  }
  const double exposedShare = row.stepS > 0 ? row.exposedS / row.stepS : 0;
  const std::string what = fmt::format(
      "predicted step at world {} on {}: {:.3f} ms (compute {:.3f} ms, exposed communication "
      "{:.1f}%)", p.world, p.network.topology.name, row.stepS * 1e3, row.computeS * 1e3,
      100 * exposedShare);
  std::vector<std::string> failures;
  if (p.stepTimeMax && row.stepS > *p.stepTimeMax) {
    failures.push_back(fmt::format("{}: {}, above step_time_max = {} s", s.path, what,
                                   *p.stepTimeMax));
  }
  if (p.exposedShareMax && exposedShare > *p.exposedShareMax) {
    failures.push_back(fmt::format("{}: {}, above exposed_share_max = {}", s.path, what,
                                   *p.exposedShareMax));
  }
  return failures;
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
  // Totals over ranks: a rank that waits for a slower peer inside an
  // allreduce sees that wait as exposed communication, so single ranks are
  // noisy on a shared machine; the run as a whole is not.
  OverlapSummary all;
  std::string perRank;
  for (const auto& [rank, sum] : trace->byRank) {
    all.steps += sum.steps;
    all.stepUs += sum.stepUs;
    all.computeUs += sum.computeUs;
    all.commUs += sum.commUs;
    all.exposedCommUs += sum.exposedCommUs;
    perRank += fmt::format("{}rank {}: overlap {:.3f}, exposed {:.1f}%", perRank.empty() ? "" : "; ",
                           rank, sum.overlapRatio(), 100 * sum.exposedShare());
  }
  std::vector<std::string> failures;
  checkLaunchStructure(s, *trace, failures);
  if (o.exposedCommMax && all.exposedShare() > *o.exposedCommMax) {
    failures.push_back(fmt::format(
        "{}: exposed communication is {:.1f}% of step time over all ranks, above "
        "exposed_comm_max = {} ({})",
        s.path, 100 * all.exposedShare(), *o.exposedCommMax, perRank));
  }
  if (o.overlapRatioMin && all.overlapRatio() < *o.overlapRatioMin) {
    failures.push_back(fmt::format(
        "{}: overlap ratio {:.3f} over all ranks, below overlap_ratio_min = {} ({})", s.path,
        all.overlapRatio(), *o.overlapRatioMin, perRank));
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
                   {"backward_ms", s.backwardUs / n / 1000},
                   {"comm_after_arrival_ms", s.commAfterArrivalUs / n / 1000},
                   {"exposed_after_arrival_ms", s.exposedAfterArrivalUs / n / 1000},
                   {"overlap_ratio", s.overlapRatio()},
                   {"compute_share", s.computeShare()},
                   {"exposed_share", s.exposedShare()},
                   {"min_launches_in_backward", s.minLaunchesInBackward},
                   {"max_waits_in_backward", s.maxWaitsInBackward}});
  }
  return out;
}

}  // namespace distlab::emulator
