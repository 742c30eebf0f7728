// Several nccl ranks on the one GPU, in forked processes. NCCL normally
// refuses two ranks of a communicator on one device ("Duplicate GPU
// detected"): then the test is reported *skipped* with NCCL's words, never
// passed. Where NCCL accepts them, the values of a collective, point-to-point
// and an all-to-all are checked.
//
// This binary never initialises CUDA itself before the ranks fork (a forked
// child cannot use a CUDA context of its parent): the device check runs in a
// forked child (gpu_fork_check.hpp).
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "runtime/comm/process_group.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "tests/gpu/gpu_fork_check.hpp"
#include "tests/support/spawn.hpp"
#include "tests/support/test_groups.hpp"

namespace distlab::gputest {
namespace {

using testing::RankContext;
using testing::SpawnMode;

// Thrown by a rank whose communicator set-up NCCL refused.
constexpr const char* kRefused = "NCCL refused the communicator: ";

void ranksBody(RankContext& ctx) {
  auto pg = testing::makeTestGroup(ctx, "nccl", "multirank", std::chrono::seconds(30));
  const TensorOptions gpu{DType::kFloat32, Device::cuda(0)};
  Tensor t = full({1024}, ctx.rank + 1.0, gpu);
  try {
    pg->allreduce(t)->wait();
  } catch (const DistError& e) {
    const std::string what = e.what();
    if (what.find("ncclCommInitRankConfig") == std::string::npos) throw;
    throw std::runtime_error(kRefused + what);
  }
  const double n = ctx.worldSize;
  if (t.sum().item<double>() != 1024 * n * (n + 1) / 2) throw std::runtime_error("allreduce sum");
  Tensor p = full({16}, ctx.rank == 0 ? 7.0 : 0.0, gpu);
  if (ctx.rank == 0) pg->send(p, 1);
  if (ctx.rank == 1) pg->recv(p, 0);
  if (ctx.rank <= 1 && p.sum().item<double>() != 7.0 * 16) throw std::runtime_error("send/recv");
  Tensor in = full({ctx.worldSize * 2}, ctx.rank, gpu), out = zeros({ctx.worldSize * 2}, gpu);
  pg->alltoallSingle(out, in)->wait();
  std::vector<double> expect;
  for (int q = 0; q < ctx.worldSize; ++q) expect.insert(expect.end(), {double(q), double(q)});
  if (out.to(Device::cpu()).to(DType::kFloat64).toVector<double>() != expect)
    throw std::runtime_error("all_to_all_single");
  pg->barrier()->wait();
  pg->shutdown();
}

TEST(NcclMultiRank, TwoRanksOnOneGpuInProcesses) {
  if (const std::string reason = cudaUnavailableReasonInChild(); !reason.empty()) {
    GTEST_SKIP() << reason;
  }
  const auto outcomes = testing::spawnCollect(SpawnMode::kProcesses, 2, ranksBody,
                                              {.timeout = std::chrono::seconds(120)});
  std::string refusal, failures;
  for (const auto& o : outcomes) {
    if (o.ok) continue;
    if (o.error.find(kRefused) != std::string::npos) {
      refusal = o.error;
    } else {
      failures += "rank " + std::to_string(o.rank) + ": " + o.error + "\n";
    }
  }
  // A peer of a refused rank may only time out waiting for it at set-up.
  if (!refusal.empty() && failures.find("ncclCommInitRankConfig") != std::string::npos) {
    failures.clear();
  }
  ASSERT_TRUE(failures.empty()) << failures;
  if (!refusal.empty()) GTEST_SKIP() << "two NCCL ranks on one GPU: " << refusal;
}

}  // namespace
}  // namespace distlab::gputest
