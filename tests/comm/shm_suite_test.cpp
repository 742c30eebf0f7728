// The collective suite on the shm backend, in threads and in processes. Small
// slots and channels make every size above a few KiB take the chunked,
// pipelined paths.
#include "tests/comm/collective_suite.hpp"

namespace distlab::testing {

INSTANTIATE_TEST_SUITE_P(
    Shm, CollectiveSuite,
    ::testing::Values(
        CollectiveSuiteParam{"shm", SpawnMode::kThreads,
                             {{"shm.slot_bytes", "4096"}, {"shm.channel_bytes", "4096"}}},
        CollectiveSuiteParam{"shm", SpawnMode::kProcesses,
                             {{"shm.slot_bytes", "4096"}, {"shm.channel_bytes", "4096"}}}),
    collectiveSuiteParamName);

// The same suite with allreduce forced onto reduce-scatter + all-gather (the
// selector only picks it for large messages).
INSTANTIATE_TEST_SUITE_P(
    ShmRsAg, CollectiveSuite,
    ::testing::Values(CollectiveSuiteParam{
        "shm", SpawnMode::kThreads,
        {{"shm.slot_bytes", "4096"}, {"shm.allreduce_algo", "rsag"}}}),
    collectiveSuiteParamName);

}  // namespace distlab::testing
