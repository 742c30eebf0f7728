#include <cmath>
#include <limits>

#include "tests/tensor/test_util.hpp"

#include <rapidcheck/gtest.h>

namespace distlab {
namespace {

using testing::f32;
using testing::f64;
using testing::i64;

Tensor cube() { return arange(24, {DType::kFloat64}).view({2, 3, 4}); }

TEST(Reduce, SumOverDims) {
  Tensor t = cube();
  EXPECT_EQ(t.sum().item<double>(), 276.0);
  EXPECT_EQ(t.sum().dim(), 0);
  EXPECT_EQ(t.sum({0}).toVector<double>(),
            (std::vector<double>{12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}));
  EXPECT_EQ(t.sum({2}).toVector<double>(), (std::vector<double>{6, 22, 38, 54, 70, 86}));
  EXPECT_EQ(t.sum({1}).toVector<double>(),
            (std::vector<double>{12, 15, 18, 21, 48, 51, 54, 57}));
  EXPECT_EQ(t.sum({0, 2}).toVector<double>(), (std::vector<double>{60, 92, 124}));
  EXPECT_EQ(t.sum({-1}, true).sizes(), (Shape{2, 3, 1}));
  EXPECT_EQ(t.sum({0, 2}, true).sizes(), (Shape{1, 3, 1}));
  // Non-contiguous input.
  // [4, 3, 2] view: out[j][i] = sum_k t[i][j][k].
  EXPECT_EQ(t.transpose(0, 2).sum({0}).toVector<double>(),
            (std::vector<double>{6, 54, 22, 70, 38, 86}));
  EXPECT_THROW_MSG(t.sum({0, 0}), ValueError, "sum: dim 0 appears multiple times");
  EXPECT_THROW_MSG(t.sum({3}), ValueError, "sum: dimension out of range");
}

TEST(Reduce, SumDtypes) {
  EXPECT_EQ(fromVector<int32_t>({1, 2, 3}).sum().dtype(), DType::kInt64);
  EXPECT_EQ(fromVector<bool>({true, true, false}).sum().item<int64_t>(), 2);
  Tensor h = full({4096}, 1, {DType::kFloat16});
  // float16 alone cannot count past 2048; the float accumulator can.
  EXPECT_EQ(h.sum().item<float>(), 4096.0f);
  EXPECT_EQ(h.sum().dtype(), DType::kFloat16);
  EXPECT_EQ(zeros({0}).sum().item<float>(), 0.0f);
}

TEST(Reduce, MeanProdVarNorm) {
  Tensor t = cube();
  EXPECT_EQ(t.mean().item<double>(), 11.5);
  EXPECT_EQ(t.mean({2}).toVector<double>(), (std::vector<double>{1.5, 5.5, 9.5, 13.5, 17.5, 21.5}));
  EXPECT_THROW_MSG(i64({1, 2}).mean(), ValueError, "mean: input dtype must be a floating point");
  EXPECT_EQ(f64({1, 2, 3, 4}).prod().item<double>(), 24.0);
  EXPECT_EQ(i64({2, 3, 4, 5}, {2, 2}).prod({1}).toVector<int64_t>(), (std::vector<int64_t>{6, 20}));
  EXPECT_EQ(f64({1, 2, 3, 4}).var({0}).item<double>(), 5.0 / 3.0);
  EXPECT_EQ(f64({1, 2, 3, 4}).var({0}, false).item<double>(), 1.25);
  EXPECT_EQ(f64({3, 4}).norm().item<double>(), 5.0);
  EXPECT_EQ(f64({3, -4}).norm(1).item<double>(), 7.0);
  EXPECT_EQ(f64({3, -4}).norm(INFINITY).item<double>(), 4.0);
  EXPECT_EQ(f64({3, 4, 0, 1}, {2, 2}).norm(2, {1}).toVector<double>(),
            (std::vector<double>{5, 1}));
  // 8^(1/3) goes through pow: within 1 ulp of 2, not necessarily exact.
  EXPECT_DOUBLE_EQ(f64({1, 1, 1, 1, 1, 1, 1, 1}).norm(3).item<double>(), 2.0);
}

TEST(Reduce, MaxMinArgmax) {
  Tensor t = f32({3, 7, 7, 1, 9, 2}, {2, 3});
  EXPECT_EQ(t.max().item<float>(), 9.0f);
  EXPECT_EQ(t.min().item<float>(), 1.0f);
  auto [values, indices] = t.max(1);
  EXPECT_EQ(values.toVector<float>(), (std::vector<float>{7, 9}));
  EXPECT_EQ(indices.toVector<int64_t>(), (std::vector<int64_t>{1, 1}));  // first of the tie
  EXPECT_EQ(indices.dtype(), DType::kInt64);
  auto [minV, minI] = t.min(0, true);
  EXPECT_EQ(minV.sizes(), (Shape{1, 3}));
  EXPECT_EQ(minV.toVector<float>(), (std::vector<float>{1, 7, 2}));
  EXPECT_EQ(minI.toVector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(t.argmax(0).toVector<int64_t>(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(t.argmin(1).toVector<int64_t>(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(t.amax({0, 1}).item<float>(), 9.0f);
  Tensor n = f32({1, NAN, 3});
  EXPECT_TRUE(std::isnan(n.max().item<float>()));
  EXPECT_EQ(n.argmax(0).item<int64_t>(), 1);
  EXPECT_THROW_MSG(zeros({0}).max(), ValueError, "max: cannot reduce over an empty dimension");
}

// sum over any subset of dims (contiguous or permuted input) equals a naive
// loop; small integers keep float64 sums exact.
RC_GTEST_PROP(ReduceProp, SumMatchesNaive, (uint8_t mask, bool permuted, bool keepdim)) {
  const Shape shape{2, 3, 4};
  Generator gen(mask);
  Tensor t = randint(-5, 6, shape, gen, {DType::kFloat64});
  if (permuted) t = t.permute({2, 0, 1});
  Shape dims;
  for (int64_t d = 0; d < 3; ++d) {
    if (mask & (1 << d)) dims.push_back(d);
  }
  const Tensor got = t.sum(dims, keepdim);
  // Naive: accumulate every element into its output slot.
  Shape outFull = t.sizes();
  for (int64_t d = 0; d < 3; ++d) {
    if (dims.empty() || (mask & (1 << d))) outFull[d] = 1;
  }
  std::vector<double> want(static_cast<size_t>(shapeNumel(outFull)), 0.0);
  for (int64_t i = 0; i < t.size(0); ++i)
    for (int64_t j = 0; j < t.size(1); ++j)
      for (int64_t k = 0; k < t.size(2); ++k) {
        const int64_t oi = outFull[0] == 1 ? 0 : i, oj = outFull[1] == 1 ? 0 : j,
                      ok = outFull[2] == 1 ? 0 : k;
        want[(oi * outFull[1] + oj) * outFull[2] + ok] +=
            t.select(0, i).select(0, j).select(0, k).item<double>();
      }
  RC_ASSERT(got.toVector<double>() == want);
  if (keepdim) RC_ASSERT(got.sizes() == outFull);
}

}  // namespace
}  // namespace distlab
