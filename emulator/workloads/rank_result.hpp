#pragma once
// What one rank reports at the end of a scenario (rank<R>.json in the result
// folder), written by the worker, read by the runner. A rank that crashed or
// was killed writes none; the runner then relies on its exit status and its
// event log.
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace distlab::emulator {

struct RankResult {
  int rank = -1;
  std::string status = "ok";      // ok | error
  std::string errorType;          // DistTimeoutError, ...
  std::string message;
  int64_t startUs = 0, endUs = 0, errorUs = 0;  // wall clock
  std::vector<double> losses;     // training: per step
  // training with loss_decreased: the loss on one fixed batch with the
  // initial and the final parameters (NaN when not measured).
  double probeLossBefore = std::numeric_limits<double>::quiet_NaN();
  double probeLossAfter = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> stepMs;     // training: per step, data to optimizer step (traced or not)
  std::string paramChecksum;      // training: FNV-1a over parameter bytes (hex)
  // params_match_reference (rank 0; Note [Checking an engine against the
  // single-process reference]): worst |gradient deviation| / rounding bound.
  bool referenceChecked = false;
  bool referenceWithinBound = true;
  double referenceWorstRatio = 0;
  std::string referenceDetail;    // where the worst deviation was
  int stepsRun = 0;
  // Training: the first step whose loss or parameters were not finite (-1:
  // none), when (wall clock) and what ("loss = nan", "parameter 0 holds inf").
  int nonFiniteStep = -1;
  int64_t nonFiniteUs = 0;
  std::string nonFiniteWhat;
  // A program's named values, in the order it reported them
  // (distlab::program::report, emulator/program/program.hpp).
  std::map<std::string, std::vector<double>> reported;
};

// Note [Non-finite numbers in result files]
// JSON has no NaN or infinity. Rank results and scenario reports write such a
// number as the string "NaN", "Infinity" or "-Infinity" (nlohmann would write
// null, which loses which one it was and fails to read back as a number), and
// read those strings back as the number.
nlohmann::json jsonNumber(double value);
nlohmann::json jsonNumbers(const std::vector<double>& values);
// Throws Error for anything but a number or one of the three strings.
double numberFromJson(const nlohmann::json& j);
// {"name": [values...]} for a program's reported series (jsonNumbers each).
nlohmann::json jsonSeries(const std::map<std::string, std::vector<double>>& series);

// Records the first non-finite value of a run (later calls are ignored).
void noteNonFinite(RankResult& result, int step, std::string what);

// "rank R went non-finite first, at step S (what)": the rank with the lowest
// such step, the earliest at that step; nullopt when every rank stayed finite.
std::optional<std::pair<int, std::string>> firstNonFinite(
    const std::vector<std::optional<RankResult>>& results);

// "DistTimeoutError", "DistPeerFailureError", ... for the most derived distlab
// error type of `error` ("std::exception" / "unknown" otherwise).
std::string errorTypeName(const std::exception_ptr& error);

void writeRankResult(const std::string& path, const RankResult& result);
// Throws Error when the file is missing or malformed.
RankResult readRankResult(const std::string& path);

}  // namespace distlab::emulator
