#pragma once
// The backend-independent failure suite: what every backend must do when a
// rank dies, a peer never arrives, or the group is aborted (the contract of
// runtime/comm/backend.hpp and Note [Work failure and the caller's tensors]),
// written once and instantiated per backend:
//
//   INSTANTIATE_TEST_SUITE_P(Shm, FailureSuite,
//                            ::testing::Values(FailureSuiteParam{"shm"}),
//                            failureSuiteParamName);
//
// Ranks are processes (a rank really dies). The bounds are the contract's, not
// one backend's speed: a dead peer fails every survivor's pending collective
// within the group's timeout (plus a grace for a loaded machine), a
// collective nobody joins is DistTimeoutError no sooner than its timeout, an
// abort fails pending work at once, and after any of them the group refuses
// new work saying why. The shm and gloo suites add their own, tighter bounds
// (detection within one second, peer names in the message).
// Installed with distlab::backend_suite; distlab_add_backend_tests() runs it
// against a user's backend next to the collective suite.
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/spawn.hpp"

namespace distlab::testing {

struct FailureSuiteParam {
  std::string backend;
  int maxWorldSize = 8;  // tests that need more ranks skip, saying so
};

void PrintTo(const FailureSuiteParam& param, std::ostream* out);
std::string failureSuiteParamName(const ::testing::TestParamInfo<FailureSuiteParam>& info);

class FailureSuite : public ::testing::TestWithParam<FailureSuiteParam> {
 protected:
  // Spawns `worldSize` processes running body; skips when the backend runs fewer.
  void runRanks(int worldSize, const std::function<void(RankContext&)>& body,
                const SpawnOptions& options = {});
};

}  // namespace distlab::testing
