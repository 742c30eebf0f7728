// Reducer behaviour: initial single bucket and rebuild in ready order, unused
// parameters (global, one rank only, skipped), static graph, buffers, init sync,
// no_sync locality.
#include <gtest/gtest.h>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/hooks.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/nn/containers.hpp"
#include "runtime/nn/layers.hpp"
#include "runtime/nn/models/two_layer_net.hpp"
#include "tests/ddp/ddp_test_util.hpp"

namespace distlab::testing {
namespace {

using ddp::DDPOptions;
using ddp::DistributedDataParallel;

std::vector<std::vector<size_t>> layoutOf(const ddp::Reducer& r) {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : r.bucketInfos()) out.push_back(b.variableIndices);
  return out;
}

TEST(ReducerTest, OneBucketFirstThenRebuiltInReadyOrder) {
  spawn(SpawnMode::kThreads, 3, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    auto model = makeModel(ModelKind::kMlp);
    DDPOptions o;
    o.bucketCapMb = 0.0003;  // ~314 bytes: three buckets for the test MLP
    DistributedDataParallel ddp(model, group, o);
    ASSERT_EQ(ddp.reducer()->numBuckets(), 1u);
    std::vector<size_t> order;
    const auto params = model->parameters();
    std::vector<autograd::RemovableHandle> handles;
    for (size_t i = 0; i < params.size(); ++i) {
      handles.push_back(autograd::registerPostAccumulateGradHook(
          params[i], [&order, i](Tensor&) { order.push_back(i); }));
    }
    for (int step = 0; step < 2; ++step) {
      Batch b = shard(globalBatch(ModelKind::kMlp, 12, step), ctx.rank, 4);
      autograd::backward(lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y));
      if (step == 0) {
        EXPECT_FALSE(ddp.reducer()->hasRebuiltBuckets());
      }
    }
    EXPECT_TRUE(ddp.reducer()->hasRebuiltBuckets());
    order.resize(params.size());  // the first backward's order
    std::vector<ddp::TensorSpec> specs;
    for (size_t i : order) specs.push_back({params[i].numel(), DType::kFloat32, Device::cpu()});
    auto want = ddp::computeBucketAssignmentBySize(specs, {o.bucketBytesCap(), o.bucketBytesCap()},
                                                   {}, order);
    EXPECT_EQ(layoutOf(*ddp.reducer()), want.buckets);
    EXPECT_GT(ddp.reducer()->numBuckets(), 2u);
    const auto stats = ddp.loggingData();
    EXPECT_TRUE(stats.hasRebuiltBuckets);
    int64_t total = 0;
    for (int64_t s : stats.rebuiltBucketSizes) total += s;
    EXPECT_EQ(total, stats.totalParameterSizeBytes);
    for (auto& h : handles) h.remove();
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(ReducerTest, FindUnusedUsesCapBucketsFromTheStartAndNeverRebuilds) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    auto model = makeModel(ModelKind::kMlp);
    DDPOptions o;
    o.findUnusedParameters = true;
    o.bucketCapMb = 0.002;
    DistributedDataParallel ddp(model, group, o);
    std::vector<ddp::TensorSpec> specs;
    for (const Tensor& p : model->parameters()) specs.push_back({p.numel(), p.dtype(), p.device()});
    auto want = ddp::computeBucketAssignmentBySize(specs, {o.bucketBytesCap()});
    std::reverse(want.buckets.begin(), want.buckets.end());
    EXPECT_EQ(layoutOf(*ddp.reducer()), want.buckets);
    for (int step = 0; step < 3; ++step) {
      Batch b = shard(globalBatch(ModelKind::kMlp, 8, step), ctx.rank, 4);
      autograd::backward(lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y));
    }
    EXPECT_FALSE(ddp.reducer()->hasRebuiltBuckets());
    EXPECT_EQ(layoutOf(*ddp.reducer()), want.buckets);
    group->shutdown(std::chrono::seconds(5));
  });
}

// a.weight is used on rank 0 only (control flow in forward): its averaged
// gradient is rank 0's divided by N on every rank; b.weight averages all.
TEST(ReducerTest, ParameterUnusedOnSomeRanksIsAveragedWithZeros) {
  const int ws = 3;
  auto localGrads = [](bool useA) {
    Branchy local(useA);
    autograd::backward(ops::sum(local.forward(sameInput())));
    std::vector<Tensor> g;
    for (const Tensor& p : local.parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
    return g;
  };
  const auto withA = localGrads(true);
  const auto withoutA = localGrads(false);
  const Tensor wantA = withA[0].div(static_cast<double>(ws));
  const Tensor wantB = withA[1].add(withoutA[1].mul(static_cast<double>(ws - 1))).div(static_cast<double>(ws));
  spawn(SpawnMode::kThreads, ws, [&](RankContext& ctx) {
    auto group = makeGroup(ctx);
    auto model = std::make_shared<Branchy>(ctx.rank == 0);
    DDPOptions o;
    o.findUnusedParameters = true;
    DistributedDataParallel ddp(model, group, o);
    autograd::backward(ops::sum(ddp.forward(sameInput())));
    const auto params = model->parameters();
    ASSERT_TRUE(params[0].grad().defined());
    EXPECT_TRUE(params[0].grad().allclose(wantA, 1e-6, 1e-7));
    EXPECT_TRUE(params[1].grad().allclose(wantB, 1e-6, 1e-7));
    group->shutdown(std::chrono::seconds(5));
  });
}

void runGloballyUnused(const DDPOptions& o, bool expectSkipped) {
  spawn(SpawnMode::kThreads, 2, [&](RankContext& ctx) {
    auto group = makeGroup(ctx);
    auto model = std::make_shared<Branchy>(false);
    DistributedDataParallel ddp(model, group, o);
    for (int step = 0; step < 3; ++step) {
      model->zeroGrad();
      autograd::backward(ops::sum(ddp.forward(sameInput())));
      EXPECT_FALSE(model->parameters()[0].grad().defined()) << "a.weight stays untouched";
      EXPECT_TRUE(model->parameters()[1].grad().defined());
    }
    const auto stats = ddp.loggingData();
    EXPECT_EQ(stats.unusedParameterNames, std::vector<std::string>{"a.weight"});
    EXPECT_EQ(stats.unusedParameterSize, 400);
    bool skipped = false;
    for (const auto& t : stats.lastBucketTimings) skipped = skipped || !t.communicated;
    EXPECT_EQ(skipped, expectSkipped);
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(ReducerTest, GloballyUnusedParameterKeepsGradUndefined) {
  DDPOptions o;
  o.findUnusedParameters = true;
  runGloballyUnused(o, false);
}

TEST(ReducerTest, SkipAllReduceUnusedParamsSkipsAllUnusedBuckets) {
  DDPOptions o;
  o.findUnusedParameters = true;
  o.skipAllReduceUnusedParams = true;
  o.bucketCapMb = 0.0001;  // 104 bytes: one bucket per parameter
  runGloballyUnused(o, true);
}

TEST(ReducerTest, StaticGraphWithPermanentlyUnusedParameter) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    Generator g(1);
    auto model = std::make_shared<nn::TwoLinLayerNet>(g);
    DDPOptions o;
    o.staticGraph = true;
    DistributedDataParallel ddp(model, group, o);
    for (int step = 0; step < 4; ++step) {
      model->zeroGrad();
      auto outs = ddp.call({sameInput()});
      autograd::backward(ops::sum(outs[1]));
      EXPECT_FALSE(model->parameters()[0].grad().defined());
      EXPECT_TRUE(model->parameters()[1].grad().defined());
      // Buckets are rebuilt at the third forward with static_graph.
      EXPECT_EQ(ddp.reducer()->hasRebuiltBuckets(), step >= 2) << "step " << step;
    }
    EXPECT_EQ(ddp.loggingData().unusedParameterNames, std::vector<std::string>{"a.weight"});
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(ReducerTest, CanSetStaticGraphTracksGraphChanges) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    auto model = std::make_shared<Branchy>(false);
    DDPOptions o;
    o.findUnusedParameters = true;
    DistributedDataParallel ddp(model, group, o);
    for (int step = 0; step < 3; ++step) {
      model->setUseA(step == 2);
      autograd::backward(ops::sum(ddp.forward(sameInput())));
      EXPECT_EQ(ddp.loggingData().canSetStaticGraph, step < 2) << "step " << step;
    }
    group->shutdown(std::chrono::seconds(5));
  });
}

std::shared_ptr<nn::Module> bnNet(uint64_t seed) {
  Generator gen(seed);
  auto seq = std::make_shared<nn::Sequential>();
  seq->push_back(std::make_shared<nn::Linear>(10, 6, gen));
  seq->push_back(std::make_shared<nn::BatchNorm1d>(6));
  return seq;
}

TEST(ReducerTest, BuffersBroadcastFromRankZeroAtEachForward) {
  for (bool broadcast : {true, false}) {
    spawn(SpawnMode::kThreads, 3, [&](RankContext& ctx) {
      auto group = makeGroup(ctx);
      auto model = bnNet(5);
      DDPOptions o;
      o.broadcastBuffers = broadcast;
      DistributedDataParallel ddp(model, group, o);
      model->eval();  // running stats are read, not updated, in forward
      Tensor mean = model->buffers()[0];
      mean.fill_(static_cast<double>(ctx.rank + 1));
      ddp.forward(sameInput());
      EXPECT_EQ(mean.toVector<float>()[0], broadcast ? 1.0f : static_cast<float>(ctx.rank + 1));
      group->shutdown(std::chrono::seconds(5));
    });
  }
}

TEST(ReducerTest, InitSyncBroadcastsParametersFromRankZero) {
  for (bool initSync : {true, false}) {
    spawn(SpawnMode::kThreads, 2, [&](RankContext& ctx) {
      auto group = makeGroup(ctx);
      auto model = makeModel(ModelKind::kMlp, 100 + ctx.rank);  // different weights per rank
      auto rank0 = makeModel(ModelKind::kMlp, 100);
      DDPOptions o;
      o.initSync = initSync;
      DistributedDataParallel ddp(model, group, o);
      const double err = maxRelativeError(model->parameters(), rank0->parameters());
      if (initSync || ctx.rank == 0) {
        EXPECT_EQ(err, 0.0);
      } else {
        EXPECT_GT(err, 0.1);
      }
      group->shutdown(std::chrono::seconds(5));
    });
  }
}

TEST(ReducerTest, NoSyncKeepsGradientsLocalUntilTheNextSyncedBackward) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    auto model = makeModel(ModelKind::kMlp);
    DistributedDataParallel ddp(model, group);
    Batch b = shard(globalBatch(ModelKind::kMlp, 8, 0), ctx.rank, 4);
    {
      auto guard = ddp.noSync();
      EXPECT_FALSE(ddp.requireBackwardGradSync());
      autograd::backward(lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y));
    }
    EXPECT_TRUE(ddp.requireBackwardGradSync());
    EXPECT_FALSE(identicalAcrossRanks(group, {model->parameters()[0].grad()}));
    EXPECT_EQ(ddp.reducer()->numIterations(), 0);
    autograd::backward(lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y));
    EXPECT_TRUE(identicalAcrossRanks(group, {model->parameters()[0].grad()}));
    EXPECT_EQ(ddp.reducer()->numIterations(), 1);
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(ReducerTest, StateDictKeysHaveModulePrefix) {
  spawn(SpawnMode::kThreads, 1, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    DistributedDataParallel ddp(makeModel(ModelKind::kMlp), group);
    auto sd = ddp.stateDict();
    ASSERT_FALSE(sd.empty());
    EXPECT_EQ(sd.begin()->first.rfind("module.", 0), 0u) << sd.begin()->first;
    group->shutdown(std::chrono::seconds(5));
  });
}

}  // namespace
}  // namespace distlab::testing
