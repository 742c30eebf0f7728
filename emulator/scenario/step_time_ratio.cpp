#include "emulator/scenario/step_time_ratio.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <toml++/toml.h>

#include "emulator/trace/overlap_metrics.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {

std::string comparisonScenarioText(const std::string& path) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format("{}: cannot re-read the scenario: {}", path, e.description()));
  }
  const toml::table* ratio = root["expect"]["step_time_ratio"].as_table();
  toml::table* workload = root["workload"].as_table();
  if (ratio == nullptr || workload == nullptr) {
    throw Error(fmt::format("{}: no [expect.step_time_ratio] or [workload] table", path));
  }
  if (const toml::table* over = (*ratio)["engine_options"].as_table()) {
    toml::table options;
    if (const toml::table* base = (*workload)["engine_options"].as_table()) options = *base;
    for (const auto& [key, value] : *over) options.insert_or_assign(key, value);
    workload->insert_or_assign("engine_options", options);
  }
  if (const auto* hook = (*ratio)["comm_hook"].as_string()) {
    workload->insert_or_assign("comm_hook", hook->get());
  }
  root.insert_or_assign("name", root["name"].value_or(std::string("scenario")) + "_comparison");
  root.insert_or_assign("expect", toml::table{{"outcome", "success"}});
  std::ostringstream out;
  out << root << "\n";
  return out.str();
}

std::optional<double> steadyStepMs(const std::vector<std::vector<double>>& stepMs) {
  std::vector<double> all;
  for (const auto& steps : stepMs) {
    for (size_t i = kWarmupSteps; i < steps.size(); ++i) all.push_back(steps[i]);
  }
  if (all.empty()) return std::nullopt;
  std::sort(all.begin(), all.end());
  const size_t mid = all.size() / 2;
  return all.size() % 2 ? all[mid] : (all[mid - 1] + all[mid]) / 2;
}

std::vector<std::string> checkStepTimeRatio(const Scenario& s, std::optional<double> mineMs,
                                            std::optional<double> otherMs) {
  const OverlapExpectation& o = s.expect.overlap;
  if (!o.stepTimeRatio) return {};
  if (!mineMs || !otherMs || *otherMs <= 0) {
    return {fmt::format("{}: step_time_ratio needs steps after the warm-up in both runs", s.path)};
  }
  const double ratio = *mineMs / *otherMs;
  std::vector<std::string> failures;
  if (o.stepTimeRatioMax && ratio > *o.stepTimeRatioMax) {
    failures.push_back(fmt::format("{}: step time ratio {:.3f} ({:.2f} vs {:.2f} ms) is above "
                                   "step_time_ratio.max = {}",
                                   s.path, ratio, *mineMs, *otherMs, *o.stepTimeRatioMax));
  }
  if (o.stepTimeRatioMin && ratio < *o.stepTimeRatioMin) {
    failures.push_back(fmt::format("{}: step time ratio {:.3f} ({:.2f} vs {:.2f} ms) is below "
                                   "step_time_ratio.min = {}",
                                   s.path, ratio, *mineMs, *otherMs, *o.stepTimeRatioMin));
  }
  return failures;
}

}  // namespace distlab::emulator
