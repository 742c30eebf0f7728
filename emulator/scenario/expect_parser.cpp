// [expect] parsing.
#include <fmt/format.h>

#include <regex>

#include "emulator/predict/trace_program.hpp"
#include "emulator/scenario/scenario_parts.hpp"

namespace distlab::emulator::detail {

namespace {

Outcome parseOutcome(const std::string& text) {
  if (text == "success") return Outcome::kSuccess;
  if (text == "error") return Outcome::kError;
  return Outcome::kTimeout;
}

const std::vector<std::string> kErrorTypes = {
    "Error", "ValueError", "DistError", "DistBackendError", "DistNetworkError",
    "DistStoreError", "DistTimeoutError", "DistPeerFailureError"};

void parseRankExpect(const TomlReader& r, const toml::table& ranks, const Scenario& s,
                     Expectation& e) {
  for (const auto& [key, value] : ranks) {
    const int rank = r.rankKey(key, s.worldSize, "[expect.rank.N] key");
    if (!value.is_table()) r.fail(value, "[expect.rank.N] entries must be tables");
    const auto& t = *value.as_table();
    r.checkKeys(t, fmt::format("[expect.rank.{}]", rank),
                {"status", "error", "message", "exit_code", "signal", "output"});
    RankExpectation re;
    re.pos = r.posOf(t);
    if (auto v = r.choice(t, "status", {"ok", "error", "crashed"})) re.status = *v;
    if (auto v = r.choice(t, "error", kErrorTypes)) re.error = *v;
    if (auto v = r.strList(t, "message")) re.message = *v;
    if (auto v = r.intInRange(t, "exit_code", 1, 255)) re.exitCode = static_cast<int>(*v);
    if (auto v = r.choice(t, "signal", {"SIGKILL", "SIGABRT", "SIGTERM", "SIGSEGV"})) {
      re.signal = *v;
    }
    if (auto v = r.strList(t, "output")) {
      for (const auto& pattern : *v) {
        try {
          std::regex compiled(pattern);
        } catch (const std::regex_error& err) {
          r.fail(r.lineOfKey(t, "output"),
                 fmt::format("output: '{}' is not a valid regular expression ({})", pattern,
                             err.what()));
        }
      }
      re.output = *v;
    }
    e.perRank[rank] = re;
  }
}

// [expect.step_time_ratio]: max and/or min, and what the other run changes.
void parseStepTimeRatio(const TomlReader& r, const toml::table& expect, Scenario& s) {
  const toml::table* t = r.table(expect, "step_time_ratio");
  if (!t) return;
  r.checkKeys(*t, "[expect.step_time_ratio]", {"max", "min", "engine_options", "comm_hook"});
  OverlapExpectation& o = s.expect.overlap;
  o.stepTimeRatio = true;
  o.stepTimeRatioMax = r.number(*t, "max", NumRange{0, 1000, true, ""});
  o.stepTimeRatioMin = r.number(*t, "min", NumRange{0, 1000, true, ""});
  if (!o.stepTimeRatioMax && !o.stepTimeRatioMin) {
    r.fail(*t, "[expect.step_time_ratio] needs max and/or min (this run's step time over "
               "the other's)");
  }
  if (!t->contains("engine_options") && !t->contains("comm_hook")) {
    r.fail(*t, "[expect.step_time_ratio] needs engine_options and/or comm_hook: what the "
               "configuration it is compared with changes");
  }
  if (s.workloadKind != "training" || s.expect.outcome != Outcome::kSuccess ||
      s.training.steps < 3) {
    r.fail(*t, "[expect.step_time_ratio] needs a training workload with outcome = "
               "\"success\" and steps >= 3 (two are warm-up)");
  }
}

// exposed_comm_max / overlap_ratio_min: fractions; launches_in_backward_min: a
// bucket count; all for training runs that succeed.
void parseOverlapExpect(const TomlReader& r, const toml::table& t, Scenario& s) {
  OverlapExpectation& o = s.expect.overlap;
  o.exposedCommMax = r.number(t, "exposed_comm_max", NumRange{0, 1, true, ""});
  o.overlapRatioMin = r.number(t, "overlap_ratio_min", NumRange{0, 1, false, ""});
  if (auto v = r.intInRange(t, "launches_in_backward_min", 1, 1 << 20)) {
    o.launchesInBackwardMin = static_cast<int>(*v);
  }
  for (const char* key : {"exposed_comm_max", "overlap_ratio_min", "launches_in_backward_min"}) {
    if (!t.contains(key)) continue;
    if (s.workloadKind != "training" || s.expect.outcome != Outcome::kSuccess) {
      r.fail(r.lineOfKey(t, key), fmt::format("'{}' needs a training workload with outcome = "
                                              "\"success\" (it reads the steps' traces)", key));
    }
    if (s.training.steps < 3) {
      r.fail(r.lineOfKey(t, key), fmt::format("'{}' needs steps >= 3 (two are warm-up)", key));
    }
  }
}

// [expect.predicted]: world, topology (default: [cluster] topology),
// collective_algorithm, step_time_max (s), exposed_share_max (a fraction).
// It reads the run's trace, so the scenario is traced.
void parsePredictedExpect(const TomlReader& r, const toml::table& t, Scenario& s) {
  r.checkKeys(t, "[expect.predicted]",
              {"world", "topology", "collective_algorithm", "step_time_max", "exposed_share_max"});
  PredictedExpectation& p = s.expect.predicted;
  const auto world = r.intInRange(t, "world", 1, kMaxPredictWorld);
  if (!world) r.fail(t, "[expect.predicted] needs 'world' (the world size to predict)");
  p.world = static_cast<int>(*world);
  if (s.network) p.network = *s.network;  // [cluster]'s, unless the table says
  if (!t.get("topology") && !s.network) {
    r.fail(t, "[expect.predicted] needs a 'topology' (or one in [cluster])");
  }
  readNetworkKeys(r, t, p.network);
  p.stepTimeMax = r.number(t, "step_time_max", NumRange{0, 1e6, true, " s"});
  p.exposedShareMax = r.number(t, "exposed_share_max", NumRange{0, 1, true, ""});
  if (!p.stepTimeMax && !p.exposedShareMax) {
    r.fail(t, "[expect.predicted] needs step_time_max or exposed_share_max");
  }
  if ((s.workloadKind != "training" && s.workloadKind != "collectives") ||
      s.expect.outcome != Outcome::kSuccess) {
    r.fail(t, "[expect.predicted] needs a training or collectives workload with outcome = "
              "\"success\" (it replays the steps' trace)");
  }
  s.trace = true;
}

// [expect.report.<name>] tables: a program's reported series.
void parseReportExpect(const TomlReader& r, const toml::table& reports, Scenario& s) {
  if (s.workloadKind != "program") {
    r.fail(reports, "[expect.report.<name>] checks what a program reports "
                    "(distlab::program::report); it needs [workload] kind = \"program\"");
  }
  for (const auto& [key, value] : reports) {
    const std::string name(key.str());
    if (!value.is_table()) r.fail(value, "[expect.report.<name>] entries must be tables");
    const auto& t = *value.as_table();
    r.checkKeys(t, fmt::format("[expect.report.{}]", name),
                {"ranks", "equal_across_ranks", "differ_across_ranks", "min", "max",
                 "decreased"});
    ReportExpectation re;
    re.name = name;
    re.pos = r.posOf(t);
    if (auto v = r.ranks(t, "ranks", s.worldSize)) re.ranks = *v;
    if (auto v = r.boolean(t, "equal_across_ranks")) re.equalAcrossRanks = *v;
    if (auto v = r.boolean(t, "differ_across_ranks")) re.differAcrossRanks = *v;
    if (re.equalAcrossRanks && re.differAcrossRanks) {
      r.fail(t, fmt::format("[expect.report.{}]: equal_across_ranks and differ_across_ranks "
                            "contradict each other",
                            name));
    }
    const NumRange any{-1e300, 1e300, false, ""};
    re.min = r.number(t, "min", any);
    re.max = r.number(t, "max", any);
    if (re.min && re.max && *re.min > *re.max) {
      r.fail(t, fmt::format("[expect.report.{}]: min = {:g} is above max = {:g}", name, *re.min,
                            *re.max));
    }
    if (auto v = r.boolean(t, "decreased")) re.decreased = *v;
    s.expect.reports.push_back(std::move(re));
  }
}

}  // namespace

void parseExpect(const TomlReader& r, const toml::table& root, Scenario& s) {
  const toml::table* t = r.table(root, "expect");
  if (!t) r.fail(1, "missing required table [expect] (at least outcome = ...)");
  r.checkKeys(*t, "[expect]",
              {"outcome", "error", "message", "error_ranks", "culprits", "diagnosis",
               "detect_within", "params_equal", "params_match_reference", "params_differ",
               "loss_decreased", "rank", "exposed_comm_max", "overlap_ratio_min",
               "launches_in_backward_min", "step_time_ratio", "report", "predicted"});
  Expectation& e = s.expect;
  e.pos = r.posOf(*t);
  auto outcome = r.choice(*t, "outcome", {"success", "error", "timeout"});
  if (!outcome) r.fail(*t, "missing required key 'outcome' in [expect] (success | error | "
                           "timeout)");
  e.outcome = parseOutcome(*outcome);
  if (auto v = r.choice(*t, "error", kErrorTypes)) e.error = *v;
  if (auto v = r.strList(*t, "message")) e.message = *v;
  if (auto v = r.ranks(*t, "error_ranks", s.worldSize)) e.errorRanks = *v;
  if (auto v = r.ranks(*t, "culprits", s.worldSize)) e.culprits = *v;
  if (auto v = r.strArray(*t, "diagnosis")) e.diagnosis = *v;
  if (auto v = r.number(*t, "detect_within", NumRange{0, 600, true, " s"})) {
    if (s.faults.empty()) {
      r.fail(r.lineOfKey(*t, "detect_within"), "'detect_within' needs a fault to time from");
    }
    e.detectWithinS = *v;
  }
  bool training = s.workloadKind == "training";
  auto trainingOnly = [&](const char* key, bool& out) {
    if (auto v = r.boolean(*t, key)) {
      if (!training) r.fail(r.lineOfKey(*t, key), fmt::format("'{}' needs a training workload",
                                                              key));
      out = *v;
    }
  };
  trainingOnly("params_equal", e.paramsEqualAcrossRanks);
  trainingOnly("params_match_reference", e.paramsMatchReference);
  if (e.paramsMatchReference && s.training.overlapWithDdp) {
    r.fail(r.lineOfKey(*t, "params_match_reference"),
           "params_match_reference cannot check overlap_with_ddp = true: its first two steps "
           "(three with static_graph) do not update the parameters (PyTorch's warm-up), so the "
           "reference would differ; use params_equal and loss_decreased");
  }
  trainingOnly("params_differ", e.paramsDifferAcrossRanks);
  trainingOnly("loss_decreased", e.lossDecreased);
  parseOverlapExpect(r, *t, s);
  parseStepTimeRatio(r, *t, s);
  if (e.outcome == Outcome::kSuccess && (!e.error.empty() || !e.message.empty())) {
    r.fail(e.pos.line, "outcome = \"success\" cannot expect an error or message");
  }
  if (e.outcome != Outcome::kSuccess &&
      (e.paramsEqualAcrossRanks || e.paramsMatchReference || e.lossDecreased)) {
    r.fail(e.pos.line, "parameter and loss checks need outcome = \"success\"");
  }
  if (const toml::table* ranks = r.table(*t, "rank")) parseRankExpect(r, *ranks, s, e);
  if (const toml::table* reports = r.table(*t, "report")) parseReportExpect(r, *reports, s);
  if (const toml::table* predicted = r.table(*t, "predicted")) parsePredictedExpect(r, *predicted, s);
}

}  // namespace distlab::emulator::detail
