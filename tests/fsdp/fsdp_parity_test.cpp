// Parity: FSDP on N ranks (batch B each) equals single-process training on the
// N*B batch and equals DDP, for the MLP and the GPT-style model, wrapped per
// block and at the root only, at world sizes 1-4 (3 exercises padding and,
// for the MLP's 4-row head, an empty shard), after 10 SGD (momentum 0.9) and
// 10 AdamW steps; every reshardAfterForward setting gives the same parameters
// with the expected number of all-gathers; gradient accumulation with sync off
// equals one large batch.
//
// Tolerance 1e-5 (maxRelativeError, ddp_test_util.hpp): FSDP's reduce-scatter
// averages B-row mean gradients across ranks where the reference takes one
// N*B-row mean -- the same float32 rounding difference as DDP's all-reduce (a
// few ulp per element, ~1e-7 relative), which 10 steps keep far below 1e-5
// (AdamW with eps 1e-4: Note [AdamW eps in parity tests]). Sharding itself is
// exact: copy-in/out and padding move values without arithmetic.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "tests/fsdp/fsdp_test_util.hpp"

namespace distlab::testing {
namespace {

constexpr double kTol = 1e-5;

const std::vector<Tensor>& reference(ModelKind model, OptimKind optim, int world) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int, int>, std::vector<Tensor>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_tuple(static_cast<int>(model), static_cast<int>(optim), world);
  auto it = cache.find(key);
  if (it == cache.end()) {
    TrainConfig c;
    c.model = model;
    c.optim = optim;
    it = cache.emplace(key, trainReference(c, world)).first;
  }
  return it->second;
}

struct Param {
  ModelKind model;
  int world;
  Wrap wrap;
};

class FsdpParityTest : public ::testing::TestWithParam<Param> {};

TEST_P(FsdpParityTest, EqualsLocalTrainingAndDdp) {
  const Param p = GetParam();
  for (OptimKind optim : {OptimKind::kSgd, OptimKind::kAdamW}) {
    const auto& ref = reference(p.model, optim, p.world);
    withWorld(p.world, [&](RankContext& ctx) {
      FsdpConfig config;
      config.train.model = p.model;
      config.train.optim = optim;
      config.wrap = p.wrap;
      FsdpRun run = trainFsdp(ctx, config);
      EXPECT_LE(maxRelativeError(run.params, ref), kTol) << "rank " << ctx.rank;
      DdpRun ddp = trainDdp(ctx, makeGroup(ctx), config.train, {});
      EXPECT_LE(maxRelativeError(run.params, ddp.params), kTol) << "rank " << ctx.rank;
      EXPECT_EQ(run.counts.reduceScatters > 0, true);
    });
  }
}

std::vector<Param> params() {
  std::vector<Param> out;
  for (ModelKind m : {ModelKind::kMlp, ModelKind::kGpt}) {
    for (int w = 1; w <= 4; ++w) {
      for (Wrap wrap : {Wrap::kPerBlock, Wrap::kRootOnly}) out.push_back({m, w, wrap});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, FsdpParityTest, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& p) {
                           return modelName(p.param.model) + "World" +
                                  std::to_string(p.param.world) +
                                  (p.param.wrap == Wrap::kPerBlock ? "PerBlock" : "RootOnly");
                         });

// GPT per block: groups h.0 and the root (embeddings, ln_f, lm_head); 10 steps.
// All-gathers per step: a group resharded after forward gathers twice (forward
// and backward), one kept unsharded once.
TEST(FsdpReshardAfterForward, EverySettingGivesSameParamsAndExpectedAllGathers) {
  struct Setting {
    std::string name;
    std::optional<fsdp::ReshardAfterForward> value;
    int64_t allGathers;
  };
  const int world = 2;
  const std::vector<Setting> settings = {
      {"unset", std::nullopt, 10 * (2 + 1)}, {"true", true, 10 * (2 + 2)},
      {"false", false, 10 * (1 + 1)},        {"int1", 1, 10 * (1 + 1)},
      {"intWorld", world, 10 * (2 + 2)}};
  const auto& ref = reference(ModelKind::kGpt, OptimKind::kSgd, world);
  for (const auto& s : settings) {
    withWorld(world, [&](RankContext& ctx) {
      FsdpConfig config;
      config.train.model = ModelKind::kGpt;
      config.options.reshardAfterForward = s.value;
      FsdpRun run = trainFsdp(ctx, config);
      EXPECT_LE(maxRelativeError(run.params, ref), kTol) << s.name;
      EXPECT_EQ(run.counts.allGathers, s.allGathers) << s.name;
      EXPECT_EQ(run.counts.reduceScatters, 10 * 2) << s.name;
    });
  }
}

TEST(FsdpGradientAccumulation, SyncOffMicroBatchesEqualOneLargeBatch) {
  for (ModelKind model : {ModelKind::kMlp, ModelKind::kGpt}) {
    const auto& ref = reference(model, OptimKind::kSgd, 2);
    withWorld(2, [&](RankContext& ctx) {
      FsdpConfig config;
      config.train.model = model;
      config.accumulate = true;
      FsdpRun run = trainFsdp(ctx, config);
      EXPECT_LE(maxRelativeError(run.params, ref), kTol);
      // Only the synced micro-batch reduce-scatters: one per group and step.
      const int64_t groups = model == ModelKind::kMlp ? 3 : 2;
      EXPECT_EQ(run.counts.reduceScatters, 10 * groups);
    });
  }
}

}  // namespace
}  // namespace distlab::testing
