#pragma once
// Checks a run against the scenario's [expect] table. Each failed check is one
// message "file:line: expected ..., observed ..." (line of the [expect] table
// or of the rank's [expect.rank.N] table).
//
// Error types match by class: expecting DistBackendError accepts its
// subclass DistTimeoutError (as `except DistBackendError` would).
#include <optional>
#include <string>
#include <vector>

#include "emulator/scenario/diagnosis.hpp"

namespace distlab::emulator {

std::vector<std::string> checkExpectations(const Scenario& s, const Diagnosis& d,
                                           const std::vector<RankExit>& exits,
                                           const std::vector<std::optional<RankResult>>& results);

// [expect.rank.N] output: each pattern must match in some line of
// `logDir`/rank<N>.log (only a line's first 64 KiB is searched: the regex
// engine recurses per character).
std::vector<std::string> checkRankOutputs(const Scenario& s, const std::string& logDir);

// Whether an error of type `observed` is an `expected` (class hierarchy).
bool errorTypeIsA(const std::string& observed, const std::string& expected);

}  // namespace distlab::emulator
