// The backend-independent collective suite (tests/comm/collective_suite.hpp),
// unchanged, on the Gloo backend over TCP: ranks as threads of this process and
// as forked processes.
#include "tests/comm/collective_suite.hpp"
#include "tests/comm/failure_suite.hpp"

namespace distlab::testing {

INSTANTIATE_TEST_SUITE_P(Gloo, CollectiveSuite,
                         ::testing::Values(CollectiveSuiteParam{"gloo", SpawnMode::kThreads},
                                           CollectiveSuiteParam{"gloo", SpawnMode::kProcesses}),
                         collectiveSuiteParamName);

// The backend-independent failure suite (tests/comm/failure_suite.hpp).
INSTANTIATE_TEST_SUITE_P(Gloo, FailureSuite, ::testing::Values(FailureSuiteParam{"gloo"}),
                         failureSuiteParamName);

}  // namespace distlab::testing
