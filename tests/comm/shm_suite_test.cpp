// The collective suite on the shm backend, in threads and in processes. Small
// slots and channels make every size above a few KiB take the chunked,
// pipelined paths.
#include "tests/comm/collective_suite.hpp"
#include "tests/comm/comm_test_util.hpp"
#include "tests/comm/failure_suite.hpp"

namespace distlab::testing {

// The backend-independent failure suite (tests/comm/failure_suite.hpp); the
// shm backend's own, tighter failure tests are comm_failure_test.
INSTANTIATE_TEST_SUITE_P(Shm, FailureSuite, ::testing::Values(FailureSuiteParam{"shm"}),
                         failureSuiteParamName);

INSTANTIATE_TEST_SUITE_P(
    Shm, CollectiveSuite,
    ::testing::Values(
        CollectiveSuiteParam{"shm", SpawnMode::kThreads,
                             {{"shm.slot_bytes", "4096"}, {"shm.channel_bytes", "4096"}}},
        CollectiveSuiteParam{"shm", SpawnMode::kProcesses,
                             {{"shm.slot_bytes", "4096"}, {"shm.channel_bytes", "4096"}}}),
    collectiveSuiteParamName);

// Groups of more than kWideGroupRanks ranks count arrivals (Note [Wide groups
// count arrivals]): the property at worlds 17-24, in threads (so the ranks
// cost no processes) and with slots small enough that parts are two cache
// lines. (The pairwise count check starts above 64 ranks: the scale
// scenarios reach it, this suite does not.)
CollectiveSuiteParam wideGroups(SpawnMode mode, int maxWorld) {
  CollectiveSuiteParam p{"shm", mode, {{"shm.slot_bytes", "4096"}, {"shm.channel_bytes", "4096"}}};
  p.minWorldSize = 17;
  p.maxWorldSize = maxWorld;
  return p;
}
INSTANTIATE_TEST_SUITE_P(ShmWide, CollectiveSuite,
                         ::testing::Values(wideGroups(SpawnMode::kThreads, 24)),
                         collectiveSuiteParamName);

// The same suite with allreduce forced onto each slot algorithm: the
// selector takes direct only below 1 KiB (256 B from world 3), so without
// this direct's chunked path would go untested, and reduce-scatter +
// all-gather gets its small and uneven cases (parts of 0 or 1 element).
INSTANTIATE_TEST_SUITE_P(
    ShmRsAg, CollectiveSuite,
    ::testing::Values(CollectiveSuiteParam{
        "shm", SpawnMode::kThreads,
        {{"shm.slot_bytes", "4096"}, {"shm.allreduce_algo", "rsag"}}}),
    collectiveSuiteParamName);
// Direct also keeps every rooted operation on the steps (shm.eager_bytes=0):
// elsewhere the suite's small broadcasts, reduces, gathers and scatters are
// one-sided (Note [Eager rooted operations]).
INSTANTIATE_TEST_SUITE_P(
    ShmDirect, CollectiveSuite,
    ::testing::Values(CollectiveSuiteParam{
        "shm", SpawnMode::kThreads,
        {{"shm.slot_bytes", "4096"}, {"shm.allreduce_algo", "direct"}, {"shm.eager_bytes", "0"}}}),
    collectiveSuiteParamName);

// The same suite with every allreduce, broadcast, allgather, gather and
// reduce_scatter_tensor on the single-copy path (Note [shm single copy]):
// required (a group that cannot take it fails to create), from 0 bytes, and
// read in pieces of 4 KiB so the piecewise reductions cross many pieces.
// Skipped, with the reason, where the system forbids process_vm_readv.
const std::map<std::string, std::string> kSingleCopyOptions = {
    {"shm.slot_bytes", "4096"}, {"shm.single_copy", "on"}, {"shm.single_copy_min_bytes", "0"}};
INSTANTIATE_TEST_SUITE_P(
    ShmSingleCopy, CollectiveSuite,
    ::testing::Values(
        CollectiveSuiteParam{"shm", SpawnMode::kThreads, kSingleCopyOptions, {}, Device::cpu(),
                             crossMemoryAttachUnavailable},
        CollectiveSuiteParam{"shm", SpawnMode::kProcesses, kSingleCopyOptions, {}, Device::cpu(),
                             crossMemoryAttachUnavailable}),
    collectiveSuiteParamName);

}  // namespace distlab::testing
