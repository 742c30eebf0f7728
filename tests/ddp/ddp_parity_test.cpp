// Parity: DDP on N ranks with batch B each equals single-process training on
// the N*B batch (fp32, 10 SGD-with-momentum steps and 10 AdamW steps), for the
// MLP and the GPT-style model, world sizes 1-4, every option alone and every
// built-in hook; parameters bitwise identical across ranks.
//
// Tolerances (maxRelativeError, see ddp_test_util.hpp; AdamW eps: Note
// [AdamW eps in parity tests] there):
//   exact hooks/options: 1e-5. DDP sums B-row means divided by N where the
//     reference takes one N*B-row mean; the two differ by float32 rounding
//     (a few ulp per gradient element, ~1e-7 relative), which 10 steps of SGD or
//     AdamW keep below 1e-5 for every case here.
//   fp16 compression: 2e-3 (SGD) / 2e-2 (AdamW). Each step's averaged gradient
//     is rounded twice to float16 (the cast and the allreduce result), a relative
//     error <= 2 * 2^-11 ~ 1e-3 per element; SGD moves parameters by lr * g, so
//     their error stays below ~1e-3 of their own size. AdamW normalises each
//     element's gradient, so an element whose gradient is tiny next to the
//     rounding error of its bucket neighbours can change its step by O(lr);
//     10 steps of lr = 2e-3 bound that by ~2e-2 absolute.
//   bf16 compression: 2e-2 (SGD) / 1.5e-1 (AdamW): bfloat16 keeps 8 significant
//     bits (2 * 2^-8 ~ 8e-3 per element and step), same reasoning; the AdamW
//     figure is dominated by the small last-layer weights (max |w| ~ 0.2), where
//     the ~2e-2 absolute bound is ~1e-1 relative (measured 7.6e-2).
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "runtime/ddp/comm_hooks/default_hooks.hpp"
#include "tests/ddp/ddp_test_util.hpp"

namespace distlab::testing {
namespace {

struct Case {
  std::string name;
  ddp::DDPOptions options;
  HookInstaller hook;
  double tolSgd = 1e-5;
  double tolAdamW = 1e-5;
  bool noSync = false;
};

ddp::DDPOptions with(const std::function<void(ddp::DDPOptions&)>& edit) {
  ddp::DDPOptions o;
  edit(o);
  return o;
}

HookInstaller hookOf(ddp::CommHookFn fn, const std::string& name) {
  return [fn, name](ddp::DistributedDataParallel& d) { d.registerCommHook({}, fn, name); };
}

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"Default", {}, {}});
  c.push_back({"SmallBuckets", with([](auto& o) { o.bucketCapMb = 0.0005; }), {}});
  c.push_back({"NoBroadcastBuffers", with([](auto& o) { o.broadcastBuffers = false; }), {}});
  c.push_back({"NoInitSync", with([](auto& o) { o.initSync = false; }), {}});
  c.push_back({"FindUnused", with([](auto& o) { o.findUnusedParameters = true; }), {}});
  c.push_back({"FindUnusedSkipUnused", with([](auto& o) {
                 o.findUnusedParameters = true;
                 o.skipAllReduceUnusedParams = true;
               }), {}});
  c.push_back({"GradAsBucketView", with([](auto& o) { o.gradientAsBucketView = true; }), {}});
  c.push_back({"GradAsBucketViewSmallBuckets", with([](auto& o) {
                 o.gradientAsBucketView = true;
                 o.bucketCapMb = 0.0005;
               }), {}});
  c.push_back({"StaticGraph", with([](auto& o) { o.staticGraph = true; }), {}});
  c.push_back({"NoSync", {}, {}, 1e-5, 1e-5, true});
  c.push_back({"AllreduceHook", {}, hookOf(ddp::allreduceHook, "allreduce_hook")});
  c.push_back({"Fp16CompressHook", {}, hookOf(ddp::fp16CompressHook, "fp16"), 2e-3, 2e-2});
  c.push_back({"Bf16CompressHook", {}, hookOf(ddp::bf16CompressHook, "bf16"), 2e-2, 1.5e-1});
  c.push_back({"Fp16WrapperAllreduce", {},
               hookOf(ddp::fp16CompressWrapper(ddp::allreduceHook), "fp16w"), 2e-3, 2e-2});
  c.push_back({"Bf16WrapperAllreduce", {},
               hookOf(ddp::bf16CompressWrapper(ddp::allreduceHook), "bf16w"), 2e-2, 1.5e-1});
  return c;
}

// The delayed all-reduce names depend on the model.
ddp::DDPOptions delayedOptions(ModelKind kind) {
  ddp::DDPOptions o;
  if (kind == ModelKind::kMlp) {
    o.delayAllReduceNamedParams = {"layers.4.weight", "layers.4.bias"};
    o.paramToHookAllReduce = "layers.0.weight";
  } else {
    o.delayAllReduceNamedParams = {"lm_head.weight"};
    o.paramToHookAllReduce = "wte.weight";
  }
  return o;
}

struct Param {
  ModelKind model;
  int worldSize;
  size_t caseIndex;  // cases().size() = the delayed all-reduce case
};

std::string caseName(size_t i) { return i < cases().size() ? cases()[i].name : "DelayAllReduce"; }

const std::vector<Tensor>& reference(ModelKind model, OptimKind optim, int worldSize) {
  static std::map<std::tuple<int, int, int>, std::vector<Tensor>> cache;
  auto key = std::make_tuple(static_cast<int>(model), static_cast<int>(optim), worldSize);
  auto it = cache.find(key);
  if (it == cache.end()) {
    TrainConfig config;
    config.model = model;
    config.optim = optim;
    it = cache.emplace(key, trainReference(config, worldSize)).first;
  }
  return it->second;
}

class DdpParityTest : public ::testing::TestWithParam<Param> {};

TEST_P(DdpParityTest, MatchesSingleProcessTraining) {
  const Param p = GetParam();
  const bool delayed = p.caseIndex == cases().size();
  const Case c = delayed ? Case{"DelayAllReduce", delayedOptions(p.model), {}} : cases()[p.caseIndex];
  const auto& refSgd = reference(p.model, OptimKind::kSgd, p.worldSize);
  const auto& refAdamW = reference(p.model, OptimKind::kAdamW, p.worldSize);
  spawn(SpawnMode::kThreads, p.worldSize, [&](RankContext& ctx) {
    auto group = makeGroup(ctx);
    for (OptimKind optim : {OptimKind::kSgd, OptimKind::kAdamW}) {
      TrainConfig config;
      config.model = p.model;
      config.optim = optim;
      DdpRun run = trainDdp(ctx, group, config, c.options, c.hook, c.noSync);
      const double tol = optim == OptimKind::kSgd ? c.tolSgd : c.tolAdamW;
      const double err = maxRelativeError(run.params, optim == OptimKind::kSgd ? refSgd : refAdamW);
      EXPECT_LE(err, tol) << c.name << " rank " << ctx.rank
                          << (optim == OptimKind::kSgd ? " SGD" : " AdamW");
      EXPECT_TRUE(identicalAcrossRanks(group, run.params)) << c.name << " rank " << ctx.rank;
    }
    group->shutdown(std::chrono::seconds(5));
  });
}

std::vector<Param> allParams() {
  std::vector<Param> out;
  for (ModelKind m : {ModelKind::kMlp, ModelKind::kGpt}) {
    for (int ws = 1; ws <= 4; ++ws) {
      for (size_t i = 0; i <= cases().size(); ++i) out.push_back({m, ws, i});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Options, DdpParityTest, ::testing::ValuesIn(allParams()),
                         [](const ::testing::TestParamInfo<Param>& param) {
                           return modelName(param.param.model) + "_W" +
                                  std::to_string(param.param.worldSize) + "_" +
                                  caseName(param.param.caseIndex);
                         });

// The no-op hook communicates nothing: each rank trains on its own shard
// exactly as a local run would (bitwise).
TEST(DdpNoopHookTest, EqualsLocalTrainingOnOwnShard) {
  for (ModelKind m : {ModelKind::kMlp, ModelKind::kGpt}) {
    const int ws = 3;
    std::vector<std::vector<Tensor>> local;
    TrainConfig config;
    config.model = m;
    for (int r = 0; r < ws; ++r) local.push_back(trainReference(config, ws, r));
    spawn(SpawnMode::kThreads, ws, [&](RankContext& ctx) {
      auto group = makeGroup(ctx);
      DdpRun run = trainDdp(ctx, group, config, {}, hookOf(ddp::noopHook, "noop_hook"));
      EXPECT_EQ(maxRelativeError(run.params, local[ctx.rank]), 0.0) << "rank " << ctx.rank;
      group->shutdown(std::chrono::seconds(5));
    });
  }
}

// Ranks as processes: the same parity through the shm backend across fork.
TEST(DdpParityProcessesTest, MlpAndGptDefault) {
  for (auto [m, ws] : {std::pair{ModelKind::kMlp, 2}, std::pair{ModelKind::kMlp, 4},
                       std::pair{ModelKind::kGpt, 3}}) {
    const auto& ref = reference(m, OptimKind::kSgd, ws);
    spawn(SpawnMode::kProcesses, ws, [&](RankContext& ctx) {
      auto group = makeGroup(ctx);
      TrainConfig config;
      config.model = m;
      DdpRun run = trainDdp(ctx, group, config, {});
      EXPECT_LE(maxRelativeError(run.params, ref), 1e-5);
      EXPECT_TRUE(identicalAcrossRanks(group, run.params));
      group->shutdown(std::chrono::seconds(5));
    });
  }
}

TEST(DdpParityProcessesTest, NoSyncAndFindUnusedAcrossProcesses) {
  const auto& ref = reference(ModelKind::kMlp, OptimKind::kAdamW, 3);
  spawn(SpawnMode::kProcesses, 3, [&](RankContext& ctx) {
    auto group = makeGroup(ctx);
    TrainConfig config;
    config.optim = OptimKind::kAdamW;
    ddp::DDPOptions o;
    o.findUnusedParameters = true;
    o.gradientAsBucketView = true;
    DdpRun run = trainDdp(ctx, group, config, o, {}, /*noSyncMicro=*/true);
    EXPECT_LE(maxRelativeError(run.params, ref), 1e-5);
    EXPECT_TRUE(identicalAcrossRanks(group, run.params));
    group->shutdown(std::chrono::seconds(5));
  });
}

}  // namespace
}  // namespace distlab::testing
