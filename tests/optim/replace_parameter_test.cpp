// Optimizer::replaceParameter: the state follows the tensor that takes a
// parameter's place (float64, exact small values).
#include <gtest/gtest.h>

#include "runtime/core/errors.hpp"
#include "runtime/optim/sgd.hpp"

namespace distlab::optim {
namespace {

Tensor param(std::vector<double> values) {
  Tensor p = fromVector<double>(values);
  p.setRequiresGrad(true);
  return p;
}

TEST(ReplaceParameter, MomentumFollowsTheSwappedTensor) {
  Tensor old = param({1, 2});
  SgdOptions o;
  o.lr = 0.5;
  o.momentum = 1.0;
  SGD sgd({old}, o);
  old.setGrad(fromVector<double>({1, 1}));
  sgd.step();  // buf = g = 1; p = p - 0.5
  Tensor swapped = param({10, 20});
  sgd.replaceParameter(old, swapped);
  EXPECT_EQ(sgd.findState(old), nullptr);
  ASSERT_NE(sgd.findState(swapped), nullptr);
  EXPECT_TRUE(sgd.paramGroups()[0].params[0].isSame(swapped));
  swapped.setGrad(fromVector<double>({1, 1}));
  sgd.step();  // buf = 1*1 + 1 = 2; p = p - 0.5*2
  EXPECT_EQ(swapped.toVector<double>(), (std::vector<double>{9, 19}));
}

TEST(ReplaceParameter, RejectsUnknownDuplicateOrMismatchedTensors) {
  Tensor a = param({1, 2});
  Tensor b = param({1, 2});
  SGD sgd({a, b}, SgdOptions{});
  EXPECT_THROW(sgd.replaceParameter(param({1, 2}), param({1, 2})), ValueError);
  EXPECT_THROW(sgd.replaceParameter(a, b), ValueError);
  EXPECT_THROW(sgd.replaceParameter(a, param({1, 2, 3})), ValueError);
}

}  // namespace
}  // namespace distlab::optim
