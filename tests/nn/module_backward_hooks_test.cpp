// Module backward hooks: the pre-hook runs before the module's backward with
// the output gradients, the hook after it with the input gradients.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::nn {
namespace {

// y = x * w (elementwise), one parameter.
class Scale : public Module {
 public:
  Scale() : Module("Scale") { registerParameter("w", fromVector<float>({2, 3})); }
  TensorList forwardAll(const TensorList& inputs) override {
    return {ops::mul(singleInput(inputs), param("w"))};
  }
};

TEST(ModuleBackwardHooks, PreHookRunsBeforeTheModuleBackward) {
  Scale m;
  std::vector<std::string> order;
  std::vector<float> gradOut;
  m.registerFullBackwardPreHook([&](Module& mod, const TensorList& g) {
    order.push_back("pre:" + mod.typeName());
    gradOut = g[0].toVector<float>();
    // The parameter's gradient is not accumulated yet.
    EXPECT_FALSE(mod.param("w").grad().defined());
  });
  Tensor x = fromVector<float>({1, 1});
  Tensor y = m.forward(x);
  autograd::registerPostAccumulateGradHook(m.param("w"), [&](Tensor&) { order.push_back("acc"); });
  autograd::backward(ops::sum(ops::mul(y, Scalar(5.0))));
  EXPECT_EQ(order, (std::vector<std::string>{"pre:Scale", "acc"}));
  EXPECT_EQ(gradOut, (std::vector<float>{5, 5}));
}

TEST(ModuleBackwardHooks, HookSeesInputAndOutputGradientsOncePerCall) {
  Scale m;
  int calls = 0;
  m.registerFullBackwardHook([&](Module&, const TensorList& gin, const TensorList& gout) {
    ++calls;
    EXPECT_EQ(gin[0].toVector<float>(), (std::vector<float>{2, 3}));
    EXPECT_EQ(gout[0].toVector<float>(), (std::vector<float>{1, 1}));
  });
  Tensor x = fromVector<float>({1, 1});
  x.setRequiresGrad(true);  // a leaf input: the per-call hook must not pile up
  for (int i = 0; i < 3; ++i) autograd::backward(ops::sum(m.forward(x)));
  EXPECT_EQ(calls, 3);
}

TEST(ModuleBackwardHooks, RemovedHookNoLongerRuns) {
  Scale m;
  int calls = 0;
  auto h = m.registerFullBackwardPreHook([&](Module&, const TensorList&) { ++calls; });
  autograd::backward(ops::sum(m.forward(fromVector<float>({1, 1}))));
  h.remove();
  autograd::backward(ops::sum(m.forward(fromVector<float>({1, 1}))));
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace distlab::nn
