#pragma once
// What one rank reports at the end of a scenario (rank<R>.json in the result
// folder), written by the worker, read by the runner. A rank that crashed or
// was killed writes none; the runner then relies on its exit status and its
// event log.
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace distlab::emulator {

struct RankResult {
  int rank = -1;
  std::string status = "ok";      // ok | error
  std::string errorType;          // DistTimeoutError, ...
  std::string message;
  int64_t startUs = 0, endUs = 0, errorUs = 0;  // wall clock
  std::vector<double> losses;     // training: per step
  std::string paramChecksum;      // training: FNV-1a over parameter bytes (hex)
  // params_match_reference (rank 0; Note [Checking an engine against the
  // single-process reference]): worst |gradient deviation| / rounding bound.
  bool referenceChecked = false;
  bool referenceWithinBound = true;
  double referenceWorstRatio = 0;
  std::string referenceDetail;    // where the worst deviation was
  int stepsRun = 0;
};

// "DistTimeoutError", "DistPeerFailureError", ... for the most derived distlab
// error type of `error` ("std::exception" / "unknown" otherwise).
std::string errorTypeName(const std::exception_ptr& error);

void writeRankResult(const std::string& path, const RankResult& result);
// Throws Error when the file is missing or malformed.
RankResult readRankResult(const std::string& path);

}  // namespace distlab::emulator
