// DDP under Join with uneven inputs (10, 10, 7 and 3 batches on four ranks):
// training finishes on every rank, the parameters are identical on all ranks
// and equal a reference computed here by hand — per step, the gradients of
// the ranks that still have a batch, summed and divided by the initial world
// size (divide_by_initial_world_size = true) or by the number of those ranks
// (false), applied with the same SGD-with-momentum optimizer.
//
// Tolerance 1e-5 (maxRelativeError, ddp_test_util.hpp): DDP scales each rank's
// gradient by 1/D before the allreduce sums them in the backend's order, the
// reference sums then divides; the two differ by float32 rounding (a few ulp
// per element, ~1e-7 relative per step), and 10 steps of SGD keep that far
// below 1e-5 (the DDP parity tests' bound for the same model and optimizer).
#include <gtest/gtest.h>

#include "runtime/autograd/engine.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/ddp/comm_hooks/default_hooks.hpp"
#include "runtime/optim/sgd.hpp"
#include "runtime/zero/zero_redundancy_optimizer.hpp"
#include "tests/ddp/ddp_test_util.hpp"
#include "tests/join/uneven_reference.hpp"
#include "tests/support/test_groups.hpp"

namespace distlab::testing {
namespace {

using std::chrono::seconds;

// `steps` training iterations of this rank; `reached` is the last one started.
void trainSteps(ddp::DistributedDataParallel& ddp, optim::Optimizer& opt, const RankContext& ctx,
                int steps, int* reached = nullptr) {
  for (int step = 0; step < steps; ++step) {
    if (reached) *reached = step;
    Batch b = unevenBatch(ctx.worldSize, ctx.rank, step);
    opt.zeroGrad();
    autograd::backward(lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y));
    opt.step();
  }
}

struct JoinRun {
  std::vector<Tensor> params;
  int64_t shadowed = 0;
};

// One rank's training inside ddp.join().
JoinRun trainUnderJoin(const RankContext& ctx, const comm::ProcessGroupPtr& group,
                   const std::vector<int>& batches, bool divideByInitial,
                   ddp::DDPOptions options = {}, const HookInstaller& hook = {}) {
  auto model = makeModel(ModelKind::kMlp);
  ddp::DistributedDataParallel ddp(model, group, options);
  if (hook) hook(ddp);
  auto opt = unevenSgd(model->parameters());
  join::Join join = ddp.join(divideByInitial);
  trainSteps(ddp, *opt, ctx, batches[ctx.rank]);
  join.exit();
  return {copies(model->parameters()), join.shadowedIterations()};
}

struct Case {
  std::string name;
  std::string backend;
  std::vector<int> batches;
  bool divideByInitial;
  ddp::DDPOptions options;
  HookInstaller hook;
};

std::vector<Case> cases() {
  ddp::DDPOptions small;
  small.bucketCapMb = 0.002;  // several buckets, rebuilt at the second forward
  ddp::DDPOptions unused;
  unused.findUnusedParameters = true;
  const HookInstaller allreduceHook = [](ddp::DistributedDataParallel& d) {
    d.registerCommHook({}, ddp::allreduceHook, "allreduce_hook");
  };
  const std::vector<int> four{10, 10, 7, 3};
  return {
      {"InitialWorldSize", "shm", four, true, {}, {}},
      {"EffectiveWorldSize", "shm", four, false, {}, {}},
      {"SmallBucketsEffective", "shm", four, false, small, {}},
      {"FindUnusedEffective", "shm", four, false, unused, {}},
      {"AllreduceHook", "shm", four, true, small, allreduceHook},
      {"RankWithoutBatches", "shm", {0, 5, 2}, false, small, {}},
      {"GlooTwoRanks", "gloo", {6, 2}, false, {}, {}},
      {"GlooThreeRanks", "gloo", {3, 7, 5}, true, small, {}},
  };
}

class DdpJoinParity : public ::testing::TestWithParam<Case> {};

TEST_P(DdpJoinParity, MatchesHandReferenceOnEveryRank) {
  const Case& c = GetParam();
  const auto reference = unevenHandReference(c.batches, c.divideByInitial);
  const int world = static_cast<int>(c.batches.size());
  const int most = *std::max_element(c.batches.begin(), c.batches.end());
  spawn(SpawnMode::kProcesses, world, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, c.backend, "ddp_join", seconds(20));
    JoinRun run = trainUnderJoin(ctx, group, c.batches, c.divideByInitial, c.options, c.hook);
    EXPECT_EQ(run.shadowed, most - c.batches[ctx.rank]);
    EXPECT_TRUE(identicalAcrossRanks(group, run.params)) << "rank " << ctx.rank;
    const double err = maxRelativeError(run.params, reference);
    EXPECT_LE(err, 1e-5) << "rank " << ctx.rank;
  }, {.timeout = seconds(90)});
}

INSTANTIATE_TEST_SUITE_P(Uneven, DdpJoinParity, ::testing::ValuesIn(cases()),
                         [](const auto& param) { return param.param.name; });

// ZeRO under Join: Join([ddp, zero]); a joined rank's ZeRO hook steps its own
// partition with the average DDP's shadow left in .grad, so the result is the
// same hand reference (same tolerance and reason).
TEST(DdpJoinTest, ZeroUnderJoinMatchesHandReference) {
  const std::vector<int> batches{10, 10, 7, 3};
  for (bool divideByInitial : {true, false}) {
    const auto reference = unevenHandReference(batches, divideByInitial);
    spawn(SpawnMode::kProcesses, 4, [&](RankContext& ctx) {
      auto group = makeTestGroup(ctx, "shm", "zero_join", seconds(20));
      auto model = makeModel(ModelKind::kMlp);
      ddp::DistributedDataParallel ddp(model, group);
      zero::ZeroRedundancyOptimizer opt(model->parameters(), optim::optimizerFactory("sgd"),
                                        group, {}, {{"lr", kUnevenLr}, {"momentum", 0.9}});
      join::JoinOptions options;
      options.kwargs.flags["divide_by_initial_world_size"] = divideByInitial;
      join::Join join({&ddp, &opt}, options);
      for (int step = 0; step < batches[ctx.rank]; ++step) {
        Batch b = unevenBatch(4, ctx.rank, step);
        opt.zeroGrad();
        autograd::backward(lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y));
        opt.step();
      }
      join.exit();
      EXPECT_TRUE(identicalAcrossRanks(group, model->parameters()));
      EXPECT_LE(maxRelativeError(model->parameters(), reference), 1e-5)
          << "rank " << ctx.rank << " divideByInitial " << divideByInitial;
    }, {.timeout = seconds(60)});
  }
}

// The two divisors really differ: the runs must not agree with each other.
TEST(DdpJoinTest, TheTwoDivisorsGiveDifferentModels) {
  const std::vector<int> four{10, 10, 7, 3};
  EXPECT_GT(maxRelativeError(unevenHandReference(four, true),
                             unevenHandReference(four, false)),
            1e-3);
}

TEST(DdpJoinTest, EarlyTerminationThrowsOnEveryRank) {
  const std::vector<int> batches{5, 2, 5};
  spawn(SpawnMode::kProcesses, 3, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, "shm", "ddp_join", seconds(20));
    auto model = makeModel(ModelKind::kMlp);
    ddp::DistributedDataParallel ddp(model, group);
    auto opt = unevenSgd(model->parameters());
    join::Join join = ddp.join(true, true, /*throwOnEarlyTermination=*/true);
    int reached = -1;
    try {
      trainSteps(ddp, *opt, ctx, batches[ctx.rank], &reached);
      join.exit();
      ADD_FAILURE() << "no early-termination error on rank " << ctx.rank;
    } catch (const Error& e) {
      const std::string expected =
          ctx.rank == 1 ? "Rank 1 exhausted all inputs."
                        : "Detected at least one rank that exhausted inputs. Throwing across all "
                          "ranks.";
      EXPECT_EQ(e.what(), expected);
      EXPECT_EQ(reached, ctx.rank == 1 ? 1 : 2);
    }
  }, {.timeout = seconds(60)});
}

TEST(DdpJoinTest, WithoutJoinEveryWaitingRankGetsAClearError) {
  const std::vector<int> batches{4, 4, 2};
  spawn(SpawnMode::kProcesses, 3, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, "shm", "no_join", seconds(2));
    auto model = makeModel(ModelKind::kMlp);
    ddp::DistributedDataParallel ddp(model, group);
    auto opt = unevenSgd(model->parameters());
    std::string error;
    try {
      trainSteps(ddp, *opt, ctx, batches[ctx.rank]);
    } catch (const DistError& e) {
      error = e.what();
    }
    if (ctx.rank == 2) {
      EXPECT_EQ(error, "");
      // Stay alive (no exit that peers would see) until both peers have their error.
      ctx.store->wait({"reported0", "reported1"}, seconds(30));
      return;
    }
    // The collective, its sequence number and the rank that never came.
    EXPECT_NE(error.find("ALLREDUCE (seq 9)"), std::string::npos) << error;
    EXPECT_NE(error.find("ranks [2] have not arrived"), std::string::npos) << error;
    ctx.store->setString("reported" + std::to_string(ctx.rank), "1");
  }, {.timeout = seconds(60)});
}

TEST(DdpJoinTest, UnsupportedOptionsAreRejectedByName) {
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, "shm", "ddp_join", seconds(20));
    ddp::DDPOptions staticGraph;
    staticGraph.staticGraph = true;
    ddp::DistributedDataParallel ddp(makeModel(ModelKind::kMlp), group, staticGraph);
    try {
      join::Join join = ddp.join();
      ADD_FAILURE() << "static_graph accepted";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("static_graph"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(ddp.joinConfig().enable);
  }, {.timeout = seconds(60)});
}

}  // namespace
}  // namespace distlab::testing
