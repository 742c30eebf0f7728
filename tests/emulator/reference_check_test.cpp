// ReferenceChecker (Note [Checking an engine against the single-process
// reference]): an engine whose gradient differs from the reference only by
// summation order passes at any order; a gradient off by more than the
// rounding bound, or a parameter touched outside the optimizer, fails and is
// named.
#include <gtest/gtest.h>

#include <algorithm>

#include "emulator/workloads/reference_check.hpp"
#include "emulator/workloads/scenario_data.hpp"
#include "emulator/workloads/training_model.hpp"
#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/optim/adam.hpp"

namespace distlab::emulator {
namespace {

constexpr int kRanks = 3;

TrainingWorkload adamwTraining() {
  TrainingWorkload tr;
  tr.model = "residual_mlp";
  tr.sizes = {16, 32, 64, 4};
  tr.engine = "ddp";
  tr.optimizer = "adamw";
  tr.lr = 0.01;
  tr.steps = 4;
  return tr;
}

// What a DDP engine computes, with its own reduction order: every rank's
// local gradient divided by n, summed over ranks in `order`.
std::vector<Tensor> engineGradients(nn::Module& model, const TrainingWorkload& tr, int step,
                                    const std::vector<int>& order) {
  std::vector<std::vector<Tensor>> local(kRanks);
  for (int q = 0; q < kRanks; ++q) {
    model.zeroGrad();
    auto [x, y] = scenarioBatch(tr, kRanks, q, step);
    autograd::backward(scenarioLoss(model.call({x}), y, true));
    for (const auto& p : model.parameters()) local[q].push_back(p.grad().div(Scalar(kRanks)));
  }
  std::vector<Tensor> sum;
  for (int q : order) {
    for (size_t i = 0; i < local[q].size(); ++i) {
      if (sum.size() <= i) sum.push_back(local[q][i].clone());
      else sum[i].add_(local[q][i]);
    }
  }
  return sum;
}

// Trains `steps` AdamW steps like an engine would; `tamper` may change the
// gradients (before the check) or the parameters (after the step).
ReferenceVerdict train(const std::vector<int>& order,
                       const std::function<void(int, std::vector<Tensor>&)>& tamper) {
  const TrainingWorkload tr = adamwTraining();
  ReferenceChecker checker(tr, kRanks, kRanks);
  auto model = buildScenarioModel(tr);
  auto params = model->parameters();
  optim::AdamWOptions o;
  o.lr = tr.lr;
  optim::AdamW opt(params, o);
  for (int step = 0; step < tr.steps; ++step) {
    auto grads = engineGradients(*model, tr, step, order);
    for (size_t i = 0; i < params.size(); ++i) params[i].setGrad(grads[i]);
    tamper(step, params);
    checker.afterBackward(step, true, params);
    opt.step();
    opt.zeroGrad();
    checker.afterOptimizerStep(params);
  }
  return checker.verdict();
}

TEST(ReferenceCheck, AnySummationOrderIsWithinTheRoundingBound) {
  std::vector<int> order{0, 1, 2};
  do {
    ReferenceVerdict v = train(order, [](int, std::vector<Tensor>&) {});
    EXPECT_TRUE(v.checked);
    EXPECT_TRUE(v.withinBound) << v.detail;
    EXPECT_LE(v.worstRatio, 1.0) << v.detail;
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(ReferenceCheck, AGradientOffByMoreThanTheBoundFailsAndIsNamed) {
  ReferenceVerdict v = train({0, 1, 2}, [](int step, std::vector<Tensor>& params) {
    if (step != 2) return;
    Tensor g = params[0].grad();
    float* data = g.data<float>();
    data[5] *= 1.0f + 1e-4f;  // ~800 ulp: far past the few-ulp rounding bound
  });
  EXPECT_FALSE(v.withinBound);
  EXPECT_GT(v.worstRatio, 1.0);
  EXPECT_NE(v.detail.find("step 2"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("[5]"), std::string::npos) << v.detail;
}

TEST(ReferenceCheck, AParameterChangedOutsideTheOptimizerFails) {
  ReferenceVerdict v = train({0, 1, 2}, [](int step, std::vector<Tensor>& params) {
    if (step != 3) return;
    autograd::NoGradGuard noGrad;
    params.back().add_(Scalar(1e-3));
  });
  EXPECT_FALSE(v.withinBound);
  EXPECT_NE(v.detail.find("changed between the optimizer step and step 3"), std::string::npos)
      << v.detail;
}

}  // namespace
}  // namespace distlab::emulator
