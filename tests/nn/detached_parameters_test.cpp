// DetachedParameters: a forward that leaves named parameters out of the graph.
#include "runtime/nn/detached_parameters.hpp"

#include <gtest/gtest.h>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/nn/models/mlp.hpp"

namespace distlab::nn {
namespace {

Tensor sumOfOutputs(Module& m, const Tensor& x) { return ops::sum(m.forward(x)); }

TEST(DetachedParameters, SameValuesNoGradientOriginalBack) {
  Generator gen(0);
  Mlp mlp({4, 8, 1, 2}, gen);  // layers.0 (4->8), layers.2 (8->2)
  const Tensor x = randn({3, 4}, gen);
  const double plain = sumOfOutputs(mlp, x).item<double>();
  const Tensor bias = mlp.namedParameters()[3].second;  // layers.2.bias
  {
    DetachedParameters detached(mlp, {"layers.2.bias"});
    Tensor out = sumOfOutputs(mlp, x);
    EXPECT_EQ(out.item<double>(), plain);  // the same storage, the same arithmetic
    autograd::backward(out);
  }
  const NamedTensors after = mlp.namedParameters();
  EXPECT_TRUE(after[3].second.sharesStorageWith(bias));
  EXPECT_TRUE(after[3].second.requiresGrad());  // the parameter itself is back
  EXPECT_FALSE(after[3].second.grad().defined());  // it was not in the graph
  EXPECT_TRUE(after[2].second.grad().defined());   // layers.2.weight was
  EXPECT_TRUE(after[0].second.grad().defined());
}

TEST(DetachedParameters, UnknownNameListsTheParameters) {
  Generator gen(0);
  Mlp mlp({4, 8, 1, 2}, gen);
  try {
    DetachedParameters detached(mlp, {"layers.9.bias"});
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("no parameter \"layers.9.bias\""), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("layers.0.weight, layers.0.bias"), std::string::npos);
  }
}

}  // namespace
}  // namespace distlab::nn
