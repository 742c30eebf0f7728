// SGD, Adam, AdamW against hand-computed steps (float64 parameters; 1e-12
// tolerance covers rounding of a few multiply-adds), parameter groups, state dicts.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "runtime/core/errors.hpp"
#include "runtime/optim/adam.hpp"
#include "runtime/optim/sgd.hpp"

namespace distlab::optim {
namespace {

Tensor param(double value) {
  Tensor p = fromVector<double>({value});
  p.setRequiresGrad(true);
  return p;
}

void setGrad(Tensor& p, double g) { p.setGrad(fromVector<double>({g})); }
double val(const Tensor& p) { return p.item<double>(); }

TEST(SGD, PlainStepAndDefaults) {
  Tensor p = param(1.0);
  SGD opt({p}, SgdOptions{.lr = 0.1});
  setGrad(p, 0.5);
  opt.step();
  EXPECT_NEAR(val(p), 0.95, 1e-12);
  EXPECT_EQ(SgdOptions{}.lr, 1e-3);
  EXPECT_EQ(opt.paramGroups()[0].options.at("momentum"), 0.0);
}

TEST(SGD, MomentumDampeningNesterov) {
  Tensor a = param(1.0), b = param(1.0), c = param(1.0);
  SGD momentum({a}, {.lr = 0.1, .momentum = 0.9});
  SGD damped({b}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
  SGD nesterov({c}, {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  for (int i = 0; i < 2; ++i) {
    for (Tensor* p : {&a, &b, &c}) setGrad(*p, 0.5);
    momentum.step();
    damped.step();
    nesterov.step();
  }
  EXPECT_NEAR(val(a), 1.0 - 0.05 - 0.1 * (0.9 * 0.5 + 0.5), 1e-12);   // buf 0.5, 0.95
  EXPECT_NEAR(val(b), 1.0 - 0.05 - 0.1 * (0.9 * 0.5 + 0.25), 1e-12);  // first step undamped
  // nesterov: g + 0.9 buf with buf 0.5 then 0.95
  EXPECT_NEAR(val(c), 1.0 - 0.1 * (0.5 + 0.45) - 0.1 * (0.5 + 0.9 * 0.95), 1e-12);
  EXPECT_NEAR(momentum.findState(a)->buffers.at("momentum_buffer").item<double>(), 0.95, 1e-12);
}

TEST(SGD, WeightDecayAndMaximize) {
  Tensor a = param(1.0), b = param(1.0);
  SGD wd({a}, {.lr = 0.1, .weightDecay = 0.1});
  SGD max({b}, {.lr = 0.1, .maximize = true});
  setGrad(a, 0.5);
  setGrad(b, 0.5);
  wd.step();
  max.step();
  EXPECT_NEAR(val(a), 1.0 - 0.1 * 0.6, 1e-12);
  EXPECT_NEAR(val(b), 1.05, 1e-12);
}

TEST(SGD, SkipsParamsWithoutGradAndValidates) {
  Tensor p = param(1.0);
  SGD opt({p}, {.lr = 0.1});
  opt.step();
  EXPECT_EQ(val(p), 1.0);
  EXPECT_THROW(SGD({p}, {.lr = -1.0}), ValueError);
  EXPECT_THROW(SGD({p}, {.lr = 0.1, .nesterov = true}), ValueError);
  EXPECT_THROW(SGD(std::vector<Tensor>{}, {.lr = 0.1}), ValueError);
}

TEST(Adam, FirstStepMovesByLrTimesSign) {
  Tensor p = param(1.0);
  Adam opt({p}, [] {
    AdamOptions o;
    o.lr = 0.1;
    return o;
  }());
  setGrad(p, 0.5);
  opt.step();
  // m = 0.05, v = 0.00025, bias corrected: 0.5 / (0.5 + 1e-8)
  EXPECT_NEAR(val(p), 1.0 - 0.1 * 0.5 / (0.5 + 1e-8), 1e-12);
  EXPECT_EQ(opt.findState(p)->step, 1);
}

TEST(Adam, ThreeStepsMatchTheFormula) {
  Tensor p = param(1.0);
  AdamOptions o;
  o.lr = 0.01;
  o.weightDecay = 0.1;
  Adam opt({p}, o);
  double x = 1.0, m = 0.0, v = 0.0;
  const double grads[] = {0.5, -0.2, 0.3};
  for (int s = 1; s <= 3; ++s) {
    setGrad(p, grads[s - 1]);
    opt.step();
    const double g = grads[s - 1] + 0.1 * x;
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    const double denom = std::sqrt(v) / std::sqrt(1 - std::pow(0.999, s)) + 1e-8;
    x -= 0.01 / (1 - std::pow(0.9, s)) * m / denom;
    EXPECT_NEAR(val(p), x, 1e-12) << "step " << s;
  }
}

TEST(Adam, AmsgradKeepsTheLargestSecondMoment) {
  Tensor p = param(0.0);
  AdamOptions o;
  o.lr = 0.1;
  o.amsgrad = true;
  Adam opt({p}, o);
  setGrad(p, 1.0);
  opt.step();
  setGrad(p, 0.0);
  opt.step();
  const ParamState* st = opt.findState(p);
  const double v1 = 0.001, v2 = 0.999 * 0.001;
  EXPECT_NEAR(st->buffers.at("max_exp_avg_sq").item<double>(), v1, 1e-15);
  EXPECT_NEAR(st->buffers.at("exp_avg_sq").item<double>(), v2, 1e-15);
  const double m2 = 0.9 * 0.1;
  const double expected =
      -0.1 / (1.0 + 1e-8) -
      0.1 / (1 - 0.81) * m2 / (std::sqrt(v1) / std::sqrt(1 - 0.999 * 0.999) + 1e-8);
  EXPECT_NEAR(val(p), expected, 1e-12);
}

TEST(AdamW, DecoupledWeightDecayAndDefaults) {
  Tensor p = param(1.0);
  AdamWOptions o;
  EXPECT_EQ(o.weightDecay, 1e-2);
  EXPECT_EQ(o.lr, 1e-3);
  o.lr = 0.1;
  AdamW opt({p}, o);
  setGrad(p, 0.5);
  opt.step();
  EXPECT_NEAR(val(p), (1.0 - 0.1 * 0.01) - 0.1 * 0.5 / (0.5 + 1e-8), 1e-12);
  EXPECT_EQ(opt.name(), "AdamW");
  EXPECT_THROW(AdamW({p},
                     [] {
                       AdamWOptions bad;
                       bad.beta1 = 1.0;
                       return bad;
                     }()),
               ValueError);
}

TEST(Optimizer, ParamGroupsHaveTheirOwnOptions) {
  Tensor a = param(1.0), b = param(1.0);
  SGD opt({ParamGroup{{a}, {}}, ParamGroup{{b}, {{"lr", 1.0}}}}, {.lr = 0.1});
  setGrad(a, 1.0);
  setGrad(b, 1.0);
  opt.step();
  EXPECT_NEAR(val(a), 0.9, 1e-12);
  EXPECT_NEAR(val(b), 0.0, 1e-12);
  EXPECT_THROW(opt.addParamGroup(ParamGroup{{a}, {}}), ValueError);
  try {
    opt.addParamGroup(ParamGroup{{param(0.0)}, {{"betas", 0.5}}});
    FAIL() << "expected an error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown option \"betas\""), std::string::npos);
  }
  opt.zeroGrad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optimizer, StateDictRoundTrip) {
  Tensor a = param(1.0), b = param(1.0);
  SGD first({a}, {.lr = 0.1, .momentum = 0.9});
  setGrad(a, 0.5);
  first.step();
  OptimizerStateDict sd = first.stateDict();
  ASSERT_EQ(sd.state.size(), 1u);
  EXPECT_EQ(sd.paramGroups[0].params, (std::vector<int64_t>{0}));
  b.detach().fill_(val(a));
  SGD second({b}, {.lr = 0.5, .momentum = 0.9});
  second.loadStateDict(sd);
  EXPECT_EQ(second.paramGroups()[0].options.at("lr"), 0.1);
  setGrad(a, 0.5);
  setGrad(b, 0.5);
  first.step();
  second.step();
  EXPECT_EQ(val(a), val(b));
  OptimizerStateDict twoGroups;
  twoGroups.paramGroups.resize(2);
  EXPECT_THROW(second.loadStateDict(twoGroups), ValueError);
}

}  // namespace
}  // namespace distlab::optim
