#include <cmath>

#include "tests/tensor/test_util.hpp"

namespace distlab {
namespace {

using testing::f32;
using testing::f64;

TEST(Softmax, LastDimExact) {
  Tensor x = f64({0, std::log(3.0), 0, 0}, {2, 2});
  Tensor s = x.softmax(1);
  // exp(0)/(1+3) = 0.25, 3/4 = 0.75; tolerance 1e-15: one rounding in exp/log.
  EXPECT_TRUE(s.allclose(f64({0.25, 0.75, 0.5, 0.5}, {2, 2}), 0, 1e-15));
  EXPECT_TRUE(x.logSoftmax(1).allclose(s.log(), 0, 1e-15));
}

TEST(Softmax, OtherDimAndStability) {
  Tensor x = f32({1000, 0, 1000, 0}, {2, 2});  // exp(1000) overflows without the max shift
  Tensor s = x.softmax(0);
  EXPECT_EQ(s.toVector<float>(), (std::vector<float>{0.5, 0.5, 0.5, 0.5}));
  Tensor r = f32({1000, 0}).softmax(0);
  EXPECT_EQ(r.toVector<float>(), (std::vector<float>{1, 0}));
  EXPECT_EQ(f32({1000, 0}).logSoftmax(0).toVector<float>(), (std::vector<float>{0, -1000}));
  Tensor cube = arange(24, {DType::kFloat64}).view({2, 3, 4});
  Tensor sums = cube.softmax(1).sum({1});
  EXPECT_TRUE(sums.allclose(ones({2, 4}, {DType::kFloat64}), 0, 1e-15));
  // Non-contiguous input gives the same as its contiguous copy.
  EXPECT_TRUE(cube.transpose(1, 2).softmax(-1).equal(cube.transpose(1, 2).contiguous().softmax(-1)));
}

TEST(Softmax, Errors) {
  EXPECT_THROW_MSG(arange(3).softmax(0), ValueError, "softmax: expects a floating point tensor");
  EXPECT_THROW_MSG(zeros({2}).logSoftmax(1), ValueError, "logSoftmax: dimension out of range");
}

}  // namespace
}  // namespace distlab
