#pragma once
// The backend-independent collective suite, written once and instantiated per
// backend and rank spawner:
//
//   INSTANTIATE_TEST_SUITE_P(Shm, CollectiveSuite,
//       ::testing::Values(CollectiveSuiteParam{"shm", SpawnMode::kThreads},
//                         CollectiveSuiteParam{"shm", SpawnMode::kProcesses}),
//       collectiveSuiteParamName);
//
// Link the distlab_backend_suite target (installed: distlab::backend_suite,
// which distlab_add_backend_tests() instantiates for a user's backend;
// tests/comm/distlab_backend_tests.cmake). Every test spawns ranks, builds a
// ProcessGroup with the backend under test through the registry
// (createProcessGroup) and checks exact results against a sequential
// reference (comm_test_util.hpp).
#include <functional>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "runtime/comm/process_group.hpp"
#include "tests/support/spawn.hpp"

namespace distlab::testing {

struct CollectiveSuiteParam {
  std::string backend;
  SpawnMode mode = SpawnMode::kThreads;
  // BackendContext::options (e.g. small shm slots so chunking is exercised).
  std::map<std::string, std::string> options = {};
  // Operations the backend rejects with "Backend <name> does not support <op>";
  // the suite checks that error instead of the results. Names as in
  // Backend's messages ("reduce_scatter", "all_gather_into_tensor", ...).
  std::set<std::string> unsupported = {};
  // The device the tensors live on: each rank builds them under a
  // DefaultDeviceGuard of it (results are read back through host copies).
  Device device = Device::cpu();
  // Non-empty: why the device cannot be used here; every test skips with it.
  std::function<std::string()> unavailable = {};
  // The most ranks the backend can run here (nccl on one GPU: 1): the property
  // draws world sizes 1..maxWorldSize and tests needing more ranks skip.
  int maxWorldSize = 8;
  // Case kinds and reduce ops the property does not draw (caseKindName /
  // reduceOpName spelling): what a backend refuses by design, e.g. nccl's
  // BAND/BOR/BXOR, or a send to self outside one NCCL group ("p2p_ring").
  std::set<std::string> notDrawn = {};
  // The fewest ranks drawn; tests at fixed smaller worlds skip (an
  // instantiation for wide groups, the shm backend's Note [Wide groups count
  // arrivals]).
  int minWorldSize = 1;
};

void PrintTo(const CollectiveSuiteParam& param, std::ostream* out);
std::string collectiveSuiteParamName(const ::testing::TestParamInfo<CollectiveSuiteParam>& info);

class CollectiveSuite : public ::testing::TestWithParam<CollectiveSuiteParam> {
 protected:
  void SetUp() override;
  using RankBody = std::function<void(comm::ProcessGroup& group, RankContext& ctx)>;
  // Spawns `worldSize` ranks, each running body with its own group (timeout
  // 20 s per operation); throws SpawnError naming the failed rank. Marks the
  // test skipped and runs nothing when worldSize is outside
  // minWorldSize..maxWorldSize.
  void runRanks(int worldSize, const RankBody& body);
  bool supports(const std::string& op) const { return !GetParam().unsupported.count(op); }
};

}  // namespace distlab::testing
