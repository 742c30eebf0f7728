// Communication hooks: the GradBucket contract, PowerSGD (loss decreases,
// error-feedback state consistent across ranks, state save/restore), batched
// PowerSGD, and the compression criterion.
#include <gtest/gtest.h>

#include <set>

#include "runtime/autograd/engine.hpp"
#include "runtime/ddp/comm_hooks/default_hooks.hpp"
#include "runtime/ddp/comm_hooks/powersgd_hook.hpp"
#include "runtime/nn/models/mlp.hpp"
#include "runtime/optim/sgd.hpp"
#include "tests/ddp/ddp_test_util.hpp"

namespace distlab::testing {
namespace {

using ddp::DistributedDataParallel;
using ddp::GradBucket;
using ddp::HookState;

TEST(GradBucketTest, HookSeesBucketsInIndexOrderWithParameterViews) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    auto model = makeModel(ModelKind::kMlp);
    ddp::DDPOptions o;
    o.bucketCapMb = 0.002;
    o.findUnusedParameters = true;  // cap-sized buckets from the first iteration
    DistributedDataParallel ddp(model, group, o);
    std::vector<size_t> seen;
    std::vector<bool> last;
    ddp.registerCommHook(
        {},
        [&](const HookState& state, GradBucket& bucket) {
          seen.push_back(bucket.index());
          last.push_back(bucket.isLast());
          const auto grads = bucket.gradients();
          EXPECT_EQ(grads.size(), bucket.parameters().size());
          int64_t numel = 0;
          for (size_t i = 0; i < grads.size(); ++i) {
            EXPECT_EQ(grads[i].sizes(), bucket.parameters()[i].sizes());
            EXPECT_TRUE(grads[i].sharesStorageWith(bucket.buffer()));
            numel += grads[i].numel();
          }
          EXPECT_EQ(numel, bucket.buffer().numel());
          EXPECT_THROW(bucket.setBuffer(zeros({numel + 1})), ValueError);
          return ddp::allreduceHook(state, bucket);
        },
        "checking_hook");
    Batch b = shard(globalBatch(ModelKind::kMlp, 8, 0), ctx.rank, 4);
    autograd::backward(lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y));
    const size_t n = ddp.reducer()->numBuckets();
    ASSERT_GT(n, 1u);
    ASSERT_EQ(seen.size(), n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(seen[i], i);
      EXPECT_EQ(last[i], i + 1 == n);
    }
    EXPECT_EQ(ddp.loggingData().commHook, "checking_hook");
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(PowerSgdTest, CompressionCriterionAndOrthogonalisation) {
  EXPECT_EQ(ddp::detail::shouldCompress(10, 10, 1, 2.0), std::make_tuple(true, 100, 20));
  EXPECT_EQ(ddp::detail::shouldCompress(10, 1, 1, 2.0), std::make_tuple(false, 10, 11));
  EXPECT_EQ(ddp::detail::shouldCompress(4, 4, 2, 1.0), std::make_tuple(false, 16, 16));
  Generator gen(9);
  Tensor m = randn({2, 6, 3}, gen);
  ddp::detail::orthogonalize(m, 0.0);
  for (int64_t b = 0; b < 2; ++b) {
    Tensor gram = m.select(0, b).t().matmul(m.select(0, b));
    EXPECT_TRUE(gram.allclose(fromVector<float>({1, 0, 0, 0, 1, 0, 0, 0, 1}, {3, 3}), 1e-5, 1e-5))
        << gram;
  }
}

struct PowerSgdRun {
  std::vector<double> losses;
  std::shared_ptr<ddp::PowerSGDState> state;
  std::vector<Tensor> params;
};

// Trains a wider MLP on one fixed batch with a PowerSGD hook; `check` runs
// around each hook call (wrapping the hook) to test the error feedback.
PowerSgdRun trainPowerSgd(RankContext& ctx, const comm::ProcessGroupPtr& group, bool batched,
                          int steps, bool checkFeedback) {
  Generator gen(11);
  nn::MlpOptions mo;
  mo.inputDim = 24;
  mo.hidden = 48;
  mo.depth = 2;
  mo.outputDim = 6;
  auto model = std::make_shared<nn::Mlp>(mo, gen);
  DistributedDataParallel ddp(model, group);
  ddp::PowerSGDOptions po;
  po.startPowerSGDIter = 2;
  po.matrixApproximationRank = 2;
  auto state = std::make_shared<ddp::PowerSGDState>(nullptr, po);
  ddp::CommHookFn inner = batched ? ddp::CommHookFn(ddp::batchedPowerSgdHook)
                                  : ddp::CommHookFn(ddp::powerSgdHook);
  auto hook = [&, inner](const HookState& s, GradBucket& bucket) {
    const bool compressing = state->iter() >= po.startPowerSGDIter;
    Tensor before = bucket.buffer().clone();
    Tensor prevError;
    if (state->errorDict.count(bucket.index())) prevError = state->errorDict[bucket.index()].clone();
    auto fut = inner(s, bucket);
    if (checkFeedback && compressing && !batched) {
      Tensor out = fut->value()[0];
      Tensor fed = prevError.defined() ? before.add(prevError) : before;
      // error = (gradient + previous error) - decompressed result, bitwise.
      EXPECT_TRUE(state->errorDict[bucket.index()].equal(fed.sub(out)));
      // Summed over ranks: sum(errors) = sum(fed inputs) - N * result.
      Tensor sums = cat({state->errorDict[bucket.index()], fed});
      group->allreduce(sums)->wait();
      const int64_t n = out.numel();
      Tensor lhs = sums.narrow(0, 0, n);
      Tensor rhs = sums.narrow(0, n, n).sub(out.mul(static_cast<double>(group->size())));
      EXPECT_TRUE(lhs.allclose(rhs, 1e-4, 1e-5));
    }
    return fut;
  };
  ddp.registerCommHook(state, hook, batched ? "batched_powerSGD_hook" : "powerSGD_hook");
  optim::SgdOptions so;
  so.lr = 0.1;
  optim::SGD opt(model->parameters(), so);
  Generator data(21);
  Tensor x = randn({4, 24}, data);
  Tensor y = randint(0, 6, {4}, data);
  if (ctx.rank > 0) x = x.add(static_cast<double>(ctx.rank) * 0.1);
  PowerSgdRun run;
  for (int step = 0; step < steps; ++step) {
    opt.zeroGrad();
    Tensor loss = lossOf(ModelKind::kMlp, ddp.forward(x), y);
    autograd::backward(loss);
    opt.step();
    run.losses.push_back(loss.item<double>());
  }
  run.state = state;
  run.params = copies(model->parameters());
  return run;
}

void checkConsistentState(const comm::ProcessGroupPtr& group, const ddp::PowerSGDState& s) {
  std::vector<Tensor> qs, ps;
  std::vector<double> keys;
  for (const auto& [k, q] : s.qMemoryDict) {
    qs.push_back(q);
    keys.push_back(static_cast<double>(k));
  }
  for (const auto& [k, p] : s.pMemoryDict) ps.push_back(p);
  EXPECT_FALSE(qs.empty());
  EXPECT_TRUE(identicalAcrossRanks(group, qs));
  EXPECT_TRUE(identicalAcrossRanks(group, ps));
  std::vector<double> errorKeys;
  for (const auto& [k, e] : s.errorDict) errorKeys.push_back(static_cast<double>(k));
  EXPECT_TRUE(identicalAcrossRanks(group, {fromVector<double>(errorKeys)}));
  const auto [rate, before, after] = s.compressionStats();
  EXPECT_GT(before, after);
  EXPECT_GT(rate, 1.0);
  EXPECT_TRUE(identicalAcrossRanks(
      group, {fromVector<double>({static_cast<double>(before), static_cast<double>(after),
                                  static_cast<double>(s.iter())})}));
}

TEST(PowerSgdTest, LossDecreasesAndErrorFeedbackIsConsistent) {
  for (int ws : {2, 3}) {
    spawn(SpawnMode::kThreads, ws, [&](RankContext& ctx) {
      auto group = makeGroup(ctx);
      PowerSgdRun run = trainPowerSgd(ctx, group, /*batched=*/false, 12, /*check=*/true);
      EXPECT_LT(run.losses.back(), 0.8 * run.losses.front());
      EXPECT_EQ(run.state->iter(), 12);
      checkConsistentState(group, *run.state);
      EXPECT_TRUE(identicalAcrossRanks(group, run.params));
      group->shutdown(std::chrono::seconds(5));
    });
  }
}

TEST(PowerSgdTest, BatchedLossDecreasesAndStateIsConsistent) {
  spawn(SpawnMode::kThreads, 2, [&](RankContext& ctx) {
    auto group = makeGroup(ctx);
    PowerSgdRun run = trainPowerSgd(ctx, group, /*batched=*/true, 12, false);
    EXPECT_LT(run.losses.back(), 0.8 * run.losses.front());
    checkConsistentState(group, *run.state);
    EXPECT_TRUE(identicalAcrossRanks(group, run.params));
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(PowerSgdTest, StateDictRoundTripWithoutProcessGroup) {
  spawn(SpawnMode::kThreads, 2, [&](RankContext& ctx) {
    auto group = makeGroup(ctx);
    PowerSgdRun run = trainPowerSgd(ctx, group, false, 5, false);
    const ddp::PowerSGDStateDict saved = run.state->stateDict();
    auto restored = ddp::PowerSGDState::fromStateDict(saved, group);
    EXPECT_EQ(restored->processGroup(), group);
    EXPECT_EQ(restored->iter(), run.state->iter());
    EXPECT_EQ(restored->compressionStats(), run.state->compressionStats());
    ASSERT_EQ(restored->errorDict.size(), run.state->errorDict.size());
    for (const auto& [k, e] : run.state->errorDict) {
      EXPECT_TRUE(restored->errorDict.at(k).equal(e));
      EXPECT_FALSE(restored->errorDict.at(k).sharesStorageWith(e));
    }
    for (const auto& [k, q] : run.state->qMemoryDict) EXPECT_TRUE(restored->qMemoryDict.at(k).equal(q));
    EXPECT_EQ(restored->nextSeed(), run.state->nextSeed());  // same RNG position
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(CompressionHookTest, Fp16HookEqualsWrapperAroundAllreduce) {
  spawn(SpawnMode::kThreads, 3, [&](RankContext& ctx) {
    auto group = makeGroup(ctx);
    TrainConfig config;
    DdpRun a = trainDdp(ctx, group, config, {}, [](DistributedDataParallel& d) {
      d.registerCommHook({}, ddp::fp16CompressHook, "fp16_compress_hook");
    });
    DdpRun b = trainDdp(ctx, group, config, {}, [](DistributedDataParallel& d) {
      d.registerCommHook(comm::ProcessGroupPtr(), ddp::fp16CompressWrapper(ddp::allreduceHook),
                         "fp16_compress_wrapper");
    });
    EXPECT_EQ(maxRelativeError(a.params, b.params), 0.0);
    group->shutdown(std::chrono::seconds(5));
  });
}

}  // namespace
}  // namespace distlab::testing
