// Join's cost, measured side by side in one run (not a CTest test; run by
// hand: build/default/bench/join/join_cost_bench). Two ranks (processes, shm),
// the DDP test MLP with SGD, 4 rows per rank per step:
//   A. a normal iteration without Join (forward, backward, step; rank 1);
//   B. a normal iteration inside Join (the vote and the grad-sync allreduce
//      added; rank 1 while rank 0 still trains);
//   C. an iteration of rank 1 while rank 0 shadows it;
//   D. a shadowed iteration on rank 0 (Join::exit() time / shadowed iterations).
// Prints the medians of `kRepeats` runs of each phase. FsdpPerIteration does
// the same for the MLP under fully_shard per block (fsdp::FSDPJoinable): B adds
// the vote, D replays the recorded all-gathers and reduce-scatters with the
// real shards and zero gradients and steps the shards.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>

#include "runtime/autograd/engine.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/optim/sgd.hpp"
#include "runtime/fsdp/fsdp_join.hpp"
#include "tests/ddp/ddp_test_util.hpp"
#include "tests/fsdp/fsdp_test_util.hpp"
#include "tests/support/test_groups.hpp"

namespace distlab::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kIters = 200;   // per phase
constexpr int kRepeats = 5;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double usSince(Clock::time_point t0, int n) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
}

// Phases A-D (header comment) of `iterate` on this rank, `newJoin` making the
// Join of the run; prints the medians under `tag`.
void measurePhases(const RankContext& ctx, const char* tag, const std::function<void()>& iterate,
                   const std::function<std::unique_ptr<join::Join>()>& newJoin) {
  for (int i = 0; i < 20; ++i) iterate();  // warm-up (bucket rebuild included)
  std::vector<double> a, bIn, c, d;
  for (int rep = 0; rep < kRepeats; ++rep) {
    auto t0 = Clock::now();
    for (int i = 0; i < kIters; ++i) iterate();
    a.push_back(usSince(t0, kIters));
    std::unique_ptr<join::Join> join = newJoin();
    t0 = Clock::now();
    for (int i = 0; i < kIters; ++i) iterate();
    bIn.push_back(usSince(t0, kIters));
    t0 = Clock::now();
    if (ctx.rank == 1) {
      for (int i = 0; i < kIters; ++i) iterate();
      c.push_back(usSince(t0, kIters));
    }
    join->exit();
    if (ctx.rank == 0) {
      EXPECT_EQ(join->shadowedIterations(), kIters);
      d.push_back(usSince(t0, kIters));
    }
  }
  const auto line = ctx.rank == 0
      ? fmt::format("rank 0: A normal {:.0f} us, B in Join {:.0f} us, D shadowed {:.0f} us",
                    median(a), median(bIn), median(d))
      : fmt::format("rank 1: A normal {:.0f} us, B in Join {:.0f} us, C while peer shadows "
                    "{:.0f} us", median(a), median(bIn), median(c));
  std::printf("%s %s (median of %d x %d iterations)\n", tag, line.c_str(), kRepeats, kIters);
}

TEST(JoinCostBench, PerIteration) {
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, "shm", "bench", std::chrono::seconds(30));
    auto model = makeModel(ModelKind::kMlp);
    ddp::DistributedDataParallel ddp(model, group);
    optim::SgdOptions o;
    o.lr = 1e-3;
    optim::SGD opt(model->parameters(), o);
    const Batch b = shard(globalBatch(ModelKind::kMlp, 8, 0), ctx.rank, 4);
    measurePhases(ctx, "JOIN_COST", [&] {
      opt.zeroGrad();
      autograd::backward(lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y));
      opt.step();
    }, [&] { return std::make_unique<join::Join>(std::vector<join::Joinable*>{&ddp}); });
  }, {.timeout = std::chrono::seconds(300)});
}

TEST(JoinCostBench, FsdpPerIteration) {
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    // fully_shard asks the default group for the rank; the model uses its own group.
    comm::initProcessGroup({.backend = "shm", .store = ctx.store, .worldSize = ctx.worldSize,
                            .rank = ctx.rank, .timeout = std::chrono::seconds(30)});
    auto group = makeTestGroup(ctx, "shm", "bench", std::chrono::seconds(30));
    auto model = makeModel(ModelKind::kMlp);
    fsdp::FullyShardOptions options;
    options.mesh = comm::DeviceMesh::fromGroups({group}, "cpu");
    auto root = shardModel(model, ModelKind::kMlp, Wrap::kPerBlock, options);
    optim::SgdOptions o;
    o.lr = 1e-3;
    optim::SGD opt(model->parameters(), o);
    fsdp::FSDPJoinable joinable(*root, &opt);
    const Batch b = shard(globalBatch(ModelKind::kMlp, 8, 0), ctx.rank, 4);
    measurePhases(ctx, "FSDP_JOIN_COST", [&] {
      opt.zeroGrad();
      autograd::backward(lossOf(ModelKind::kMlp, model->forward(b.x), b.y));
      opt.step();
    }, [&] { return std::make_unique<join::Join>(std::vector<join::Joinable*>{&joinable}); });
  }, {.timeout = std::chrono::seconds(300)});
}

}  // namespace
}  // namespace distlab::testing
