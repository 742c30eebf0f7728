#pragma once
// The runner's side of tracing: merges the ranks' traces of one scenario run,
// computes the overlap metrics (Note [Overlap metrics]) and checks the
// scenario's overlap expectations against them, and its predicted step
// (emulator/predict) against [expect.predicted].
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "emulator/scenario/diagnosis.hpp"
#include "emulator/trace/overlap_metrics.hpp"

namespace distlab::emulator {

struct ScenarioTrace {
  nlohmann::json merged;                   // the merged Chrome trace
  std::vector<StepOverlap> steps;          // every rank's steps
  std::map<int, OverlapSummary> byRank;    // after the first step of each rank
};

// Reads <dir>/rank<R>.trace.json of every rank (with the event logs' faults
// as instants); nullopt when no rank wrote a trace.
std::optional<ScenarioTrace> collectScenarioTrace(const Scenario& s, const std::string& dir,
                                                  const std::vector<RankEvents>& events);

// "file: exposed communication is 31.0% of step time over all ranks, above
// exposed_comm_max = 0.25 (rank 0: ...)" style failures (totals over ranks
// and steps after the first); empty when every bound holds.
std::vector<std::string> checkOverlapExpectations(const Scenario& s,
                                                  const std::optional<ScenarioTrace>& trace);

// [expect.predicted]: the merged trace replayed at the expectation's world
// size on its network model (`distlab predict`); a failure names the
// predicted step time, its exposed share and the bound. Empty when every
// bound holds or none is asked for.
std::vector<std::string> checkPredictedExpectations(const Scenario& s,
                                                    const std::optional<ScenarioTrace>& trace);

// {"rank": R, "steps": n, "step_ms", "compute_ms", "comm_ms", "exposed_comm_ms",
//  "overlap_ratio", "compute_share", "exposed_share"} per rank.
nlohmann::json overlapJson(const std::map<int, OverlapSummary>& byRank);

}  // namespace distlab::emulator
