// The collective suite (tests/comm/collective_suite.hpp: RapidCheck properties
// over kinds, dtypes, ops, roots, shapes incl. empty and scalar, exact results)
// on the nccl backend at world size 1 — the most one GPU allows NCCL (two
// ranks on one device are refused; gpu_nccl_multirank_test records that).
// Tests that need more ranks skip; the property does not draw BAND/BOR/BXOR
// (NCCL has none: "Cannot use ReduceOp.BAND with NCCL", checked in
// nccl_world1_test.cpp) nor the send-to-self ring (each NCCL send/recv is its
// own NCCL group, so a rank's send to itself waits for a recv issued after it).
// Ranks are forked processes; the CUDA check runs in a child first.
#include "tests/comm/collective_suite.hpp"
#include "tests/gpu/gpu_fork_check.hpp"

namespace distlab::testing {

INSTANTIATE_TEST_SUITE_P(
    CudaOnNccl, CollectiveSuite,
    ::testing::Values(CollectiveSuiteParam{"nccl", SpawnMode::kProcesses, {}, {}, Device::cuda(0),
                                           gputest::cudaUnavailableReasonInChild, 1,
                                           {"BAND", "BOR", "BXOR", "p2p_ring"}}),
    collectiveSuiteParamName);

}  // namespace distlab::testing
