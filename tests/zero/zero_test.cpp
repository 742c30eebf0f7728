// ZeroRedundancyOptimizer on real ranks (forked processes, shm): DDP + ZeRO
// equals DDP + the plain optimizer, the partition's balance, the state dict
// round trip, addParamGroup, and the bad-input errors.
//
// Tolerance 1e-6 relative (maxRelativeError, tests/ddp/ddp_test_util.hpp):
// both runs see the same averaged gradients (DDP's allreduce result is the
// same on every rank) and the owner runs the same optimizer arithmetic on
// them, so the parameters should agree to the bit; the bound leaves room for
// nothing more than a different order of float32 operations.
#include <gtest/gtest.h>

#include <cstdio>

#include "runtime/autograd/engine.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/zero/zero_redundancy_optimizer.hpp"
#include "tests/ddp/ddp_test_util.hpp"
#include "tests/zero/zero_test_util.hpp"
#include "tests/support/test_groups.hpp"

namespace distlab::testing {
namespace {

using std::chrono::seconds;

optim::Options defaultsOf(const std::string& kind) { return zeroDefaultsOf(kind); }
void backwardStep(ddp::DistributedDataParallel& ddp, const RankContext& ctx, int step) {
  zeroBackwardStep(ddp, ctx, step);
}

std::vector<Tensor> trainPlain(const RankContext& ctx, const comm::ProcessGroupPtr& group,
                               const std::string& kind, int steps) {
  auto model = makeModel(ModelKind::kMlp);
  ddp::DistributedDataParallel ddp(model, group);
  auto opt = optim::optimizerFactory(kind)({{model->parameters(), {}}}, defaultsOf(kind));
  for (int s = 0; s < steps; ++s) {
    opt->zeroGrad();
    backwardStep(ddp, ctx, s);
    opt->step();
  }
  return copies(model->parameters());
}

struct ZeroCase {
  std::string kind;
  int world;
  bool bucketView;
};

class ZeroParity : public ::testing::TestWithParam<ZeroCase> {};

TEST_P(ZeroParity, EqualsDdpWithThePlainOptimizer) {
  const ZeroCase c = GetParam();
  spawn(SpawnMode::kProcesses, c.world, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, "shm", "zero", seconds(20));
    const auto plain = trainPlain(ctx, group, c.kind, 10);
    auto model = makeModel(ModelKind::kMlp);
    ddp::DistributedDataParallel ddp(model, group);
    zero::ZeroRedundancyOptimizer opt(model->parameters(), optim::optimizerFactory(c.kind), group,
                                      {.parametersAsBucketView = c.bucketView},
                                      defaultsOf(c.kind));
    for (int s = 0; s < 10; ++s) {
      opt.zeroGrad();
      backwardStep(ddp, ctx, s);
      opt.step();
    }
    EXPECT_LE(maxRelativeError(model->parameters(), plain), 1e-6) << "rank " << ctx.rank;
    EXPECT_TRUE(identicalAcrossRanks(group, model->parameters()));
    // Balance: this rank's state is its own parameters' (one buffer per
    // element for SGD with momentum, two for Adam), within one parameter of
    // total / world.
    int64_t total = 0, largest = 0, mine = 0;
    for (size_t i = 0; i < model->parameters().size(); ++i) {
      const int64_t n = model->parameters()[i].numel();
      total += n;
      largest = std::max(largest, n);
      if (opt.ownerOf(i) == ctx.rank) mine += n;
    }
    const int64_t perElement = c.kind == "sgd" ? 1 : 2;
    EXPECT_EQ(opt.localStateNumel(), mine * perElement);
    EXPECT_LE(std::abs(mine - total / c.world), largest);
    std::printf("ZERO_FIGURES kind=%s world=%d rank=%d params_owned=%lld of %lld (total/world "
                "%lld, largest param %lld) state_elements=%lld\n",
                c.kind.c_str(), c.world, ctx.rank, static_cast<long long>(mine),
                static_cast<long long>(total), static_cast<long long>(total / c.world),
                static_cast<long long>(largest), static_cast<long long>(opt.localStateNumel()));
  }, {.timeout = seconds(90)});
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, ZeroParity,
    ::testing::Values(ZeroCase{"sgd", 2, false}, ZeroCase{"adam", 3, false},
                      ZeroCase{"adamw", 4, false}, ZeroCase{"sgd", 4, true},
                      ZeroCase{"adamw", 2, true}),
    [](const auto& param) {
      return param.param.kind + "_world" + std::to_string(param.param.world) +
             (param.param.bucketView ? "_buckets" : "");
    });

TEST(ZeroTest, PartitionIsSortedGreedyOverWholeParameters) {
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, "shm", "zero", seconds(20));
    // Sizes 10, 40, 30, 20, 5: largest first -> 40:r0, 30:r1, 20:r1, 10:r0, 5:r0
    std::vector<Tensor> params;
    for (int64_t n : {10, 40, 30, 20, 5}) params.push_back(zeros({n}));
    zero::ZeroRedundancyOptimizer opt(params, optim::optimizerFactory("sgd"), group);
    const std::vector<std::vector<size_t>> expected{{0, 1, 4}, {2, 3}};
    EXPECT_EQ(opt.partition(), expected);
    // A new group never moves earlier parameters.
    opt.addParamGroup({{zeros({7}), zeros({3})}, {{"lr", 0.5}}});
    const std::vector<std::vector<size_t>> after{{0, 1, 4, 6}, {2, 3, 5}};
    EXPECT_EQ(opt.partition(), after);
  }, {.timeout = seconds(60)});
}

TEST(ZeroTest, AddParamGroupTrainsLikeThePlainOptimizer) {
  spawn(SpawnMode::kProcesses, 3, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, "shm", "zero", seconds(20));
    auto run = [&](bool sharded) {
      auto model = makeModel(ModelKind::kMlp);
      ddp::DistributedDataParallel ddp(model, group);
      auto params = model->parameters();
      std::vector<Tensor> first(params.begin(), params.begin() + 2);
      std::vector<Tensor> rest(params.begin() + 2, params.end());
      const optim::ParamGroup second{rest, {{"lr", 0.2}}};
      std::unique_ptr<optim::Optimizer> plain;
      std::unique_ptr<zero::ZeroRedundancyOptimizer> zero;
      if (sharded) {
        zero = std::make_unique<zero::ZeroRedundancyOptimizer>(
            first, optim::optimizerFactory("sgd"), group, zero::ZeroOptions{},
            defaultsOf("sgd"));
      } else {
        plain = optim::optimizerFactory("sgd")({{first, {}}}, defaultsOf("sgd"));
      }
      for (int s = 0; s < 6; ++s) {
        if (s == 2) sharded ? zero->addParamGroup(second) : plain->addParamGroup(second);
        for (auto& p : params) p.setGrad(Tensor());
        backwardStep(ddp, ctx, s);
        sharded ? zero->step() : plain->step();
      }
      return copies(params);
    };
    EXPECT_LE(maxRelativeError(run(true), run(false)), 1e-6);
  }, {.timeout = seconds(60)});
}

TEST(ZeroTest, ConsolidatedStateRoundTripsAndTrainingContinuesIdentically) {
  spawn(SpawnMode::kProcesses, 3, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, "shm", "zero", seconds(20));
    auto makeZero = [&](nn::Module& m) {
      return std::make_unique<zero::ZeroRedundancyOptimizer>(
          m.parameters(), optim::optimizerFactory("adam"), group, zero::ZeroOptions{},
          defaultsOf("adam"));
    };
    auto model = makeModel(ModelKind::kMlp);
    ddp::DistributedDataParallel ddp(model, group);
    auto opt = makeZero(*model);
    auto trainSteps = [&](ddp::DistributedDataParallel& d, zero::ZeroRedundancyOptimizer& o,
                          int from, int to) {
      for (int s = from; s < to; ++s) {
        o.zeroGrad();
        backwardStep(d, ctx, s);
        o.step();
      }
    };
    trainSteps(ddp, *opt, 0, 4);
    try {
      opt->stateDict();
      ADD_FAILURE() << "stateDict() before consolidateStateDict()";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("has not been consolidated on this rank"),
                std::string::npos);
    }
    // Every rank takes its turn as `to`, so each holds the global dictionary
    // (as if rank 0 saved it and every rank loaded the file).
    optim::OptimizerStateDict saved;
    for (int to = 0; to < ctx.worldSize; ++to) {
      opt->consolidateStateDict(to);
      if (to == ctx.rank) saved = opt->stateDict();
    }
    EXPECT_EQ(saved.state.size(), model->parameters().size());
    for (const auto& [pos, state] : saved.state) EXPECT_EQ(state.step, 4) << pos;
    // A second model with the saved parameters and state.
    auto restoredModel = makeModel(ModelKind::kMlp, /*seed=*/99);
    for (size_t i = 0; i < model->parameters().size(); ++i) {
      Tensor p = restoredModel->parameters()[i];
      p.detach().copy_(model->parameters()[i]);
    }
    ddp::DistributedDataParallel restoredDdp(restoredModel, group);
    auto restored = makeZero(*restoredModel);
    restored->loadStateDict(saved);
    trainSteps(ddp, *opt, 4, 8);
    trainSteps(restoredDdp, *restored, 4, 8);
    EXPECT_EQ(maxRelativeError(restoredModel->parameters(), model->parameters()), 0.0);
  }, {.timeout = seconds(60)});
}

TEST(ZeroTest, BadInputNamesTheArgument) {
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, "shm", "zero", seconds(20));
    auto expectError = [&](const std::function<void()>& fn, const std::string& needle) {
      try {
        fn();
        ADD_FAILURE() << "no error, expected: " << needle;
      } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      }
    };
    const auto sgd = optim::optimizerFactory("sgd");
    Tensor a = zeros({4}), b = zeros({3});
    expectError([&] { zero::ZeroRedundancyOptimizer z(std::vector<Tensor>{}, sgd, group); }, "params is empty");
    expectError([&] { zero::ZeroRedundancyOptimizer z({a, b, a}, sgd, group); },
                "params[2] is the same tensor as params[0]");
    expectError([&] { zero::ZeroRedundancyOptimizer z({a, zeros({2}, TensorOptions{DType::kFloat64})}, sgd, group); },
                "params[1] has dtype");
    expectError([&] { zero::ZeroRedundancyOptimizer z({a}, sgd, group, {}, {{"betas", 1}}); },
                "optimizer 'sgd' has no option 'betas'");
    expectError([&] { optim::optimizerFactory("lamb"); }, "unknown optimizer kind 'lamb'");
    zero::ZeroRedundancyOptimizer z({a}, sgd, group);
    expectError([&] { z.addParamGroup({{b, a}, {}}); }, "params[2] is the same tensor as params[0]");
    expectError([&] { z.consolidateStateDict(5); }, "to = 5 is not a rank of the group");
  }, {.timeout = seconds(60)});
}

}  // namespace
}  // namespace distlab::testing
