// The scenario runner's rule 2 (emulator/scenario/diagnosis.hpp) on event
// logs built by hand: a rank whose call the group refused after a peer's
// failure is not "missing", and a tie in a rooted collective names the
// ranks that disagree with the root.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/scenario/diagnosis.hpp"
#include "tests/emulator/diagnosis_inputs.hpp"

namespace distlab::emulator {
namespace {

using test_inputs::failedExits;
using test_inputs::failedRank;

OpRecord op(uint64_t seq, const std::string& fingerprint, int64_t us) {
  OpRecord r;
  r.us = us;
  r.seq = seq;
  r.fingerprint = fingerprint;
  r.op = fingerprint.substr(0, fingerprint.find(' '));
  r.failed = true;
  return r;
}

// Three ranks: rank 0 (the root) and rank 2 issued broadcast seq 2 with
// different sizes at 100 us; rank 1 issued seq 1 only and failed at `rank1Us`
// with `rank1Type` / `rank1Message`.
Diagnosis diagnoseBroadcastMismatch(const std::string& rank1Type, const std::string& rank1Message,
                                    int64_t rank1Us) {
  Scenario s;
  s.worldSize = 3;
  std::vector<RankEvents> events(3);
  for (int r = 0; r < 3; ++r) events[r].ops.push_back(op(1, "ALLREDUCE 4 float32 SUM -1 1", 10));
  events[0].ops.push_back(op(2, "BROADCAST 9 int64 - 0 1", 100));
  events[2].ops.push_back(op(2, "BROADCAST 10 int64 - 0 1", 100));
  std::vector<std::optional<RankResult>> results(3);
  results[0] = failedRank(0, "DistBackendError", "rank 2 failed: mismatch", 150);
  results[1] = failedRank(1, rank1Type, rank1Message, rank1Us);
  results[2] = failedRank(2, "DistBackendError", "Detected mismatch between collectives", 120);
  return diagnose(s, failedExits(3), results, events, 1000);
}

TEST(CollectiveDiagnosis, ARankRefusedAfterAPeersFailureIsNotMissingAndTheRootDecidesATie) {
  Diagnosis d = diagnoseBroadcastMismatch(
      "DistBackendError",
      "broadcast: group 'w1_default' refuses new work: rank 2 failed: mismatch", 130);
  EXPECT_EQ(d.culprits, std::vector<int>{2}) << d.text;
  EXPECT_NE(d.text.find("collectives differ at seq 2"), std::string::npos) << d.text;
}

TEST(CollectiveDiagnosis, ARankRefusedAfterATimeoutIsStillMissing) {
  // It hung past the timeout and then issued its call: it never issued it in time.
  Diagnosis d = diagnoseBroadcastMismatch(
      "DistTimeoutError", "broadcast: group 'w1_default' refuses new work: timed out", 130);
  EXPECT_EQ(d.culprits, std::vector<int>{1}) << d.text;
  EXPECT_NE(d.text.find("rank 1 never issued seq 2"), std::string::npos) << d.text;
}

TEST(CollectiveDiagnosis, ARankThatFailedOnItsOwnLaterIsMissing) {
  Diagnosis d = diagnoseBroadcastMismatch("DistBackendError", "some other failure", 130);
  EXPECT_EQ(d.culprits, std::vector<int>{1}) << d.text;
}

}  // namespace
}  // namespace distlab::emulator
