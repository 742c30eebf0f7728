// The collective suite (tests/comm/collective_suite.hpp: every collective,
// RapidCheck properties over kinds, dtypes, ops, roots and uneven sizes, exact
// results) with CUDA tensors on the host backends, which stage them through
// pinned memory (Note [CUDA tensors on host backends]): ranks are processes
// sharing the one GPU. Skipped with the reason where there is no CUDA device;
// the check runs in a child so this process never initialises CUDA before
// the suite forks its ranks.
#include "distlab/config.hpp"
#include "tests/comm/collective_suite.hpp"
#include "tests/gpu/gpu_fork_check.hpp"

namespace distlab::testing {

INSTANTIATE_TEST_SUITE_P(
    CudaOnShm, CollectiveSuite,
    ::testing::Values(CollectiveSuiteParam{
        "shm", SpawnMode::kProcesses,
        {{"shm.slot_bytes", "4096"}, {"shm.channel_bytes", "4096"}}, {}, Device::cuda(0),
        gputest::cudaUnavailableReasonInChild}),
    collectiveSuiteParamName);

#if DISTLAB_HAVE_GLOO
INSTANTIATE_TEST_SUITE_P(
    CudaOnGloo, CollectiveSuite,
    ::testing::Values(CollectiveSuiteParam{"gloo", SpawnMode::kProcesses, {}, {},
                                           Device::cuda(0), gputest::cudaUnavailableReasonInChild}),
    collectiveSuiteParamName);
#endif

}  // namespace distlab::testing
