// ZeroRedundancyOptimizer with overlapWithDdp on real ranks (forked processes,
// shm and gloo groups): driven by hookWithZeroStep(/Interleaved), it equals
// ZeRO without overlap started after the documented warm-up, the warm-up
// iterations leave the parameters untouched, and misuse is a clear error.
//
// Tolerance 1e-6 relative (maxRelativeError): both runs step with the
// gradients DDP averaged over the same buckets and run the same optimizer
// arithmetic on the owner, so they should agree to the bit; the only
// difference allowed is float32 rounding in the averaging (without a hook the
// Reducer multiplies by 1/world while filling the bucket, allreduceHook
// divides the bucket by world: the same for world 2 and 4, not for 3), a few
// ulps (~1e-7) per step.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>

#include "runtime/core/errors.hpp"
#include "runtime/ddp/comm_hooks/default_hooks.hpp"
#include "runtime/zero/zero_ddp_hook.hpp"
#include "runtime/zero/zero_redundancy_optimizer.hpp"
#include "tests/support/test_groups.hpp"
#include "tests/zero/zero_test_util.hpp"

namespace distlab::testing {
namespace {

using std::chrono::seconds;
constexpr int kSteps = 8;

struct OverlapCase {
  std::string kind;
  int world;
  std::string backend;
  bool interleaved;
  bool staticGraph;
  bool bucketView;  // ignored with overlap (PyTorch), so the result is the same
  bool gradAsBucketView = false;  // DDP's gradient_as_bucket_view: .grad are bucket views
};

// Buckets of ~100 bytes: the test MLP (six parameters, 1732 elements) gets
// about one bucket per parameter, more buckets than ranks, so every
// rank owns some.
ddp::DDPOptions smallBuckets(const OverlapCase& c) {
  ddp::DDPOptions o;
  o.bucketCapMb = 0.0001;
  o.staticGraph = c.staticGraph;
  o.gradientAsBucketView = c.gradAsBucketView;
  return o;
}

std::vector<Tensor> gradsOf(const std::vector<Tensor>& params) {
  std::vector<Tensor> grads;
  for (const Tensor& p : params) grads.push_back(p.grad());
  return copies(grads);
}

// ZeRO without overlap, trained on the batches of steps [from, kSteps);
// consolidated state on rank 0 in `state`, the last backward's gradients in
// `grads`.
std::vector<Tensor> trainWithoutOverlap(const RankContext& ctx, const comm::ProcessGroupPtr& group,
                                        const OverlapCase& c, int from,
                                        optim::OptimizerStateDict& state,
                                        std::vector<Tensor>& grads) {
  auto model = makeModel(ModelKind::kMlp);
  ddp::DistributedDataParallel ddp(model, group, smallBuckets(c));
  zero::ZeroRedundancyOptimizer opt(model->parameters(), optim::optimizerFactory(c.kind), group,
                                    {}, zeroDefaultsOf(c.kind));
  for (int s = from; s < kSteps; ++s) {
    opt.zeroGrad();
    zeroBackwardStep(ddp, ctx, s);
    opt.step();
  }
  grads = gradsOf(model->parameters());
  opt.consolidateStateDict(0);
  if (ctx.rank == 0) state = opt.stateDict();
  return copies(model->parameters());
}

void expectSameState(const optim::OptimizerStateDict& a, const optim::OptimizerStateDict& b) {
  ASSERT_EQ(a.state.size(), b.state.size());
  for (const auto& [pos, st] : a.state) {
    const auto& other = b.state.at(pos);
    EXPECT_EQ(st.step, other.step) << "position " << pos;
    ASSERT_EQ(st.buffers.size(), other.buffers.size()) << "position " << pos;
    for (const auto& [name, buffer] : st.buffers) {
      EXPECT_LE(maxRelativeError({buffer}, {other.buffers.at(name)}), 1e-6) << pos << " " << name;
    }
  }
}

class ZeroOverlap : public ::testing::TestWithParam<OverlapCase> {};

TEST_P(ZeroOverlap, EqualsNoOverlapStartedAfterTheWarmUp) {
  const OverlapCase c = GetParam();
  spawn(SpawnMode::kProcesses, c.world, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, c.backend, "zero", seconds(20));
    // PyTorch: no updates in the first two iterations, three with static_graph.
    const int warmUp = c.staticGraph ? 3 : 2;
    optim::OptimizerStateDict expectedState;
    std::vector<Tensor> expectedGrads;
    const auto expected = trainWithoutOverlap(ctx, group, c, warmUp, expectedState, expectedGrads);

    auto model = makeModel(ModelKind::kMlp);
    const auto initial = copies(model->parameters());
    ddp::DistributedDataParallel ddp(model, group, smallBuckets(c));
    zero::ZeroRedundancyOptimizer opt(
        model->parameters(), optim::optimizerFactory(c.kind), group,
        {.parametersAsBucketView = c.bucketView, .overlapWithDdp = true}, zeroDefaultsOf(c.kind));
    ddp.registerCommHook(group,
                         c.interleaved ? zero::hookWithZeroStepInterleaved(ddp::allreduceHook, ddp, opt)
                                       : zero::hookWithZeroStep(ddp::allreduceHook, ddp, opt),
                         "hook_with_zero_step");
    for (int s = 0; s < kSteps; ++s) {
      opt.zeroGrad();
      zeroBackwardStep(ddp, ctx, s);
      opt.step();
      if (s < warmUp) {
        EXPECT_EQ(maxRelativeError(model->parameters(), initial), 0.0) << "warm-up step " << s;
      }
      EXPECT_EQ(opt.overlapInitialized(), s >= warmUp - 1) << "step " << s;
    }
    const double error = maxRelativeError(model->parameters(), expected);
    EXPECT_LE(error, 1e-6) << "rank " << ctx.rank;
    EXPECT_GT(maxRelativeError(model->parameters(), initial), 1e-3);  // it did train
    // The hook leaves .grad as DDP does without overlap: the averaged gradients.
    EXPECT_LE(maxRelativeError(gradsOf(model->parameters()), expectedGrads), 1e-6);
    if (ctx.rank == 0) std::printf("ZERO_OVERLAP max relative error %.3g\n", error);
    EXPECT_TRUE(identicalAcrossRanks(group, model->parameters()));
    EXPECT_GT(opt.localStateNumel(), 0) << "rank " << ctx.rank << " owns no bucket";
    opt.consolidateStateDict(0);
    if (ctx.rank == 0) expectSameState(opt.stateDict(), expectedState);
  }, {.timeout = seconds(90)});
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ZeroOverlap,
    ::testing::Values(OverlapCase{"sgd", 2, "shm", false, false, false},
                      OverlapCase{"adam", 2, "gloo", true, false, true},
                      OverlapCase{"sgd", 4, "gloo", true, true, false},
                      OverlapCase{"adam", 4, "shm", false, false, false},
                      OverlapCase{"adamw", 4, "shm", true, true, false},
                      OverlapCase{"sgd", 3, "shm", true, false, false, true}),
    [](const auto& param) {
      const OverlapCase& c = param.param;
      return c.kind + "_world" + std::to_string(c.world) + "_" + c.backend +
             (c.interleaved ? "_interleaved" : "") + (c.staticGraph ? "_static" : "") +
             (c.bucketView ? "_bucketview" : "") + (c.gradAsBucketView ? "_gradview" : "");
    });

void expectError(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error, expected: " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ZeroOverlapTest, MisuseIsAClearError) {
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, "shm", "zero", seconds(20));
    const auto sgd = optim::optimizerFactory("sgd");
    const zero::ZeroOptions overlap{.overlapWithDdp = true};
    auto model = makeModel(ModelKind::kMlp);
    auto params = model->parameters();
    expectError([&] {
      zero::ZeroRedundancyOptimizer z(std::vector<optim::ParamGroup>{{{params[0]}, {}}, {{params[1]}, {}}},
                                      sgd, group, overlap);
    }, "overlapWithDdp = true supports exactly one parameter group, got 2");
    zero::ZeroRedundancyOptimizer opt(params, sgd, group, overlap, {{"lr", 0.1}});
    expectError([&] { opt.addParamGroup({{zeros({3})}, {}}); }, "exactly one parameter group");
    expectError([&] { opt.step(); }, "no DDP comm hook drives this optimizer");
    expectError([&] { opt.consolidateStateDict(0); }, "has been fully initialized");
    expectError([&] { opt.stateDict(); }, "has been fully initialized");
    expectError([&] { opt.joinHook({}); }, "Join is not supported with overlapWithDdp = true");

    ddp::DistributedDataParallel ddp(model, group);
    zero::ZeroRedundancyOptimizer plain(params, sgd, group, {}, {{"lr", 0.1}});
    expectError([&] { zero::hookWithZeroStep(ddp::allreduceHook, ddp, plain); },
                "must be constructed with overlapWithDdp = true");
    expectError([&] { zero::hookWithZeroStep(ddp::CommHookFn{}, ddp, opt); }, "hook is empty");
    zero::ZeroRedundancyOptimizer part({params[0]}, sgd, group, overlap, {{"lr", 0.1}});
    expectError([&] { zero::hookWithZeroStep(ddp::allreduceHook, ddp, part); },
                "not one of the optimizer's params");
    ddp::DistributedDataParallel unused(model, group, {.findUnusedParameters = true});
    expectError([&] { zero::hookWithZeroStep(ddp::allreduceHook, unused, opt); },
                "find_unused_parameters = true");
    ddp.registerCommHook(group, zero::hookWithZeroStep(ddp::allreduceHook, ddp, opt));
    expectError([&] { zero::hookWithZeroStepInterleaved(ddp::allreduceHook, ddp, opt); },
                "a hook was already made for this ZeroRedundancyOptimizer");
    opt.step();  // with a hook: bookkeeping only, no error
  }, {.timeout = seconds(60)});
}

}  // namespace
}  // namespace distlab::testing
