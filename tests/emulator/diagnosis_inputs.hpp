#pragma once
// Inputs to diagnose() (emulator/scenario/diagnosis.hpp) for tests that build
// a failed run's event logs by hand.
#include <cstdint>
#include <string>
#include <vector>

#include "emulator/scenario/diagnosis.hpp"

namespace distlab::emulator::test_inputs {

// Every rank of a world of `worldSize` exited with code 1.
inline std::vector<RankExit> failedExits(int worldSize) {
  std::vector<RankExit> exits(static_cast<size_t>(worldSize));
  for (int r = 0; r < worldSize; ++r) {
    exits[r].rank = r;
    exits[r].exitCode = 1;
  }
  return exits;
}

// Rank `rank` reported `type` with `message` at `us` microseconds.
inline RankResult failedRank(int rank, const std::string& type, const std::string& message,
                             int64_t us) {
  RankResult r;
  r.rank = rank;
  r.status = "error";
  r.errorType = type;
  r.message = message;
  r.errorUs = us;
  return r;
}

}  // namespace distlab::emulator::test_inputs
