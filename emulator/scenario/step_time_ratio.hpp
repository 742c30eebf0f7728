#pragma once
// [expect.step_time_ratio]: a scenario's median step time against that of the
// same scenario with other engine options or another comm hook, run right
// after it by the same runner on the same machine (docs/DESIGN.md, house style 8: claims are
// ratios measured side by side). Step times are what the ranks record for
// every step (rank<R>.json "step_ms"); the first two steps are warm-up.
#include <optional>
#include <string>
#include <vector>

#include "emulator/scenario/scenario.hpp"

namespace distlab::emulator {

// The comparison scenario's TOML: the file at `path` with its [workload]
// engine_options updated by, and comm_hook replaced by, those of
// [expect.step_time_ratio], and [expect] reduced to outcome = "success".
// Throws Error naming the file when it cannot be read.
std::string comparisonScenarioText(const std::string& path);

// Median over ranks and steps after the warm-up (one step stalled by a busy
// machine does not move it); nullopt without such steps.
std::optional<double> steadyStepMs(const std::vector<std::vector<double>>& stepMs);

// Failures of the bounds ("file: step time ratio 1.31 (12.0 vs 9.2 ms) is
// above step_time_ratio.max = 1.2"); empty when they hold.
std::vector<std::string> checkStepTimeRatio(const Scenario& s, std::optional<double> mineMs,
                                            std::optional<double> otherMs);

}  // namespace distlab::emulator
