#include <cmath>
#include <limits>

#include "tests/tensor/test_util.hpp"

#include <rapidcheck/gtest.h>

namespace distlab {
namespace {

using testing::f32;
using testing::f64;
using testing::i64;

TEST(Elementwise, ArithmeticExact) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2});
  Tensor b = f32({10, 20, 30, 40}, {2, 2});
  EXPECT_EQ(a.add(b).toVector<float>(), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(a.add(b, 2).toVector<float>(), (std::vector<float>{21, 42, 63, 84}));
  EXPECT_EQ(b.sub(a).toVector<float>(), (std::vector<float>{9, 18, 27, 36}));
  EXPECT_EQ(b.sub(a, 3).toVector<float>(), (std::vector<float>{7, 14, 21, 28}));
  EXPECT_EQ(a.mul(b).toVector<float>(), (std::vector<float>{10, 40, 90, 160}));
  EXPECT_EQ(b.div(a).toVector<float>(), (std::vector<float>{10, 10, 10, 10}));
  EXPECT_EQ(a.add(1).toVector<float>(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(a.sub(1).toVector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(a.mul(0.5).toVector<float>(), (std::vector<float>{0.5, 1, 1.5, 2}));
  EXPECT_EQ(a.div(4).toVector<float>(), (std::vector<float>{0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(a.neg().toVector<float>(), (std::vector<float>{-1, -2, -3, -4}));
}

TEST(Elementwise, Broadcasting) {
  Tensor m = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor row = f32({10, 20, 30});
  Tensor col = f32({100, 200}, {2, 1});
  EXPECT_EQ(m.add(row).toVector<float>(), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(m.add(col).toVector<float>(), (std::vector<float>{101, 102, 103, 204, 205, 206}));
  Tensor outer = row.mul(col);
  EXPECT_EQ(outer.sizes(), (Shape{2, 3}));
  EXPECT_EQ(outer.toVector<float>(), (std::vector<float>{1000, 2000, 3000, 2000, 4000, 6000}));
  EXPECT_THROW_MSG(m.add(f32({1, 2, 3, 4})), Error,
                   "add: shapes [2, 3] and [4] cannot be broadcast");
  // A non-contiguous operand goes through the strided path.
  EXPECT_EQ(m.t().add(col.t()).toVector<float>(),
            (std::vector<float>{101, 204, 102, 205, 103, 206}));
}

TEST(Elementwise, TypePromotion) {
  Tensor i = i64({1, 2});
  Tensor f = f32({0.5, 0.5});
  EXPECT_EQ(i.add(f).dtype(), DType::kFloat32);
  EXPECT_EQ(i.add(f).toVector<float>(), (std::vector<float>{1.5, 2.5}));
  EXPECT_EQ(i.add(2).dtype(), DType::kInt64);
  EXPECT_EQ(i.add(0.5).dtype(), DType::kFloat32);
  EXPECT_EQ(i.div(2).dtype(), DType::kFloat32);  // true division
  EXPECT_EQ(i.div(2).toVector<float>(), (std::vector<float>{0.5, 1}));
  EXPECT_EQ(f.add(f64({1, 1})).dtype(), DType::kFloat64);
  // A 0-dim tensor of the same category does not promote.
  EXPECT_EQ(f.mul(scalarTensor(2.0, {DType::kFloat64})).dtype(), DType::kFloat32);
  EXPECT_EQ(i.mul(scalarTensor(2.0, {DType::kFloat64})).dtype(), DType::kFloat64);
  Tensor h = fromVector<float>({1, 2}, {}, {DType::kFloat16});
  Tensor bf = fromVector<float>({1, 2}, {}, {DType::kBFloat16});
  EXPECT_EQ(h.add(bf).dtype(), DType::kFloat32);
  EXPECT_EQ(h.add(h).dtype(), DType::kFloat16);
  EXPECT_EQ(h.add(h).toVector<float>(), (std::vector<float>{2, 4}));
  Tensor b = fromVector<bool>({true, false});
  EXPECT_EQ(b.add(1).dtype(), DType::kInt64);
  EXPECT_EQ(b.add(b).toVector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_THROW_MSG(b.sub(b), Error, "subtraction with two bool tensors is not supported");
  EXPECT_THROW_MSG(i.add(i, 0.5), ValueError, "argument alpha must not be a floating point");
}

TEST(Elementwise, InPlace) {
  Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  const void* before = a.rawData();
  a.add_(f32({1, 1, 1}));
  a.mul_(2);
  a.sub_(f32({2, 2, 2, 2, 2, 2}, {2, 3}), 0.5);
  EXPECT_EQ(a.rawData(), before);
  EXPECT_EQ(a.toVector<float>(), (std::vector<float>{3, 5, 7, 9, 11, 13}));
  a.div_(f32({1, 5, 7}));
  a.add_(-1);
  a.mul_(f32({2}));
  a.div_(2);
  // Same float operations as the kernel: 11/5 - 1 and 13/7 - 1 (the *2, /2 are exact).
  EXPECT_EQ(a.toVector<float>(), (std::vector<float>{2, 0, 0, 8, 11.f / 5.f - 1.f, 13.f / 7.f - 1.f}));
  Tensor i = i64({1, 2});
  EXPECT_THROW_MSG(i.mul_(1.5), Error, "result type Float can't be cast to the desired output type Long");
  EXPECT_THROW_MSG(i.div_(i), Error, "div_: result type Float can't be cast");
  EXPECT_THROW_MSG(f32({1, 2}).add_(f32({1, 2, 3, 4}, {2, 2})), Error,
                   "add_: output with shape [2] doesn't match the broadcast shape [2, 2]");
  // In place on a strided view writes through to the base.
  Tensor base = zeros({2, 3});
  Tensor col = base.select(1, 1);
  col.add_(5);
  EXPECT_EQ(base.toVector<float>(), (std::vector<float>{0, 5, 0, 0, 5, 0}));
  Tensor f = f32({1, 2});
  f.add_(f64({0.5, 0.25}));  // float64 source keeps float32 self
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_EQ(f.toVector<float>(), (std::vector<float>{1.5, 2.25}));
}

TEST(Elementwise, UnaryMath) {
  Tensor x = f64({0, 1, 4});
  EXPECT_EQ(x.sqrt().toVector<double>(), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(x.exp().toVector<double>(), (std::vector<double>{1, std::exp(1.0), std::exp(4.0)}));
  EXPECT_EQ(f64({1, M_E}).log().toVector<double>(), (std::vector<double>{0, std::log(M_E)}));
  EXPECT_EQ(f64({4}).rsqrt().item<double>(), 0.5);
  EXPECT_EQ(f64({-2, 0, 3}).abs().toVector<double>(), (std::vector<double>{2, 0, 3}));
  EXPECT_EQ(f64({-2, 0, 3}).sign().toVector<double>(), (std::vector<double>{-1, 0, 1}));
  EXPECT_EQ(f64({-2, 0, 3}).relu().toVector<double>(), (std::vector<double>{0, 0, 3}));
  EXPECT_EQ(f64({0}).tanh().item<double>(), 0.0);
  EXPECT_EQ(f64({0}).sigmoid().item<double>(), 0.5);
  // gelu multiplies by the rounded constant 1/sqrt(2): allow 1e-15 (a few ulp).
  EXPECT_TRUE(f64({0, 1}).gelu().allclose(
      f64({0, 0.5 * (1 + std::erf(1 / std::sqrt(2.0)))}), 0, 1e-15));
  EXPECT_EQ(f64({2, 3}).pow(2).toVector<double>(), (std::vector<double>{4, 9}));
  EXPECT_EQ(f64({4, 9}).pow(0.5).toVector<double>(), (std::vector<double>{2, 3}));
  EXPECT_EQ(f64({2}).pow(3.0).item<double>(), 8.0);
  EXPECT_EQ(i64({2, 3}).pow(3).toVector<int64_t>(), (std::vector<int64_t>{8, 27}));
  EXPECT_THROW_MSG(i64({2}).pow(-1), ValueError, "integers to negative integer powers");
  EXPECT_EQ(i64({1}).exp().dtype(), DType::kFloat32);  // integer input promotes
  Tensor nan = f32({std::numeric_limits<float>::quiet_NaN()});
  EXPECT_TRUE(std::isnan(nan.relu().item<float>()));  // relu keeps NaN, as PyTorch
}

TEST(Elementwise, UnaryInPlaceAndClamp) {
  Tensor x = f32({-1, 4, 9});
  x.relu_();
  x.sqrt_();
  EXPECT_EQ(x.toVector<float>(), (std::vector<float>{0, 2, 3}));
  x.neg_();
  EXPECT_EQ(x.toVector<float>(), (std::vector<float>{-0.0f, -2, -3}));
  EXPECT_EQ(f32({-5, 0, 5}).clamp(-1, 2).toVector<float>(), (std::vector<float>{-1, 0, 2}));
  EXPECT_EQ(f32({-5, 0, 5}).clamp(std::nullopt, 1).toVector<float>(),
            (std::vector<float>{-5, 0, 1}));
  EXPECT_EQ(i64({-5, 5}).clamp(0.5, std::nullopt).dtype(), DType::kFloat32);
  EXPECT_THROW_MSG(i64({4}).sqrt_(), Error, "sqrt_: result type Float can't be cast");
  EXPECT_THROW_MSG(f32({1}).clamp(std::nullopt, std::nullopt), ValueError, "at least one of");
}

TEST(Elementwise, HalfComputesInFloat) {
  // 2049 is not representable in float16; (1024 + 1024.5) in float rounds once.
  Tensor h = fromVector<float>({1024}, {}, {DType::kFloat16});
  EXPECT_EQ(h.add(1024.5).toVector<float>(), (std::vector<float>{2048}));
  Tensor b = fromVector<float>({1, 2}, {}, {DType::kBFloat16});
  EXPECT_EQ(b.mul(b).toVector<float>(), (std::vector<float>{1, 4}));
  EXPECT_EQ(b.exp().dtype(), DType::kBFloat16);
}

TEST(Elementwise, CopyFillTo) {
  Tensor f = f32({1.5, -2.5, 3.75});
  EXPECT_EQ(f.to(DType::kInt32).toVector<int32_t>(), (std::vector<int32_t>{1, -2, 3}));
  EXPECT_EQ(f.to(DType::kBool).toVector<bool>(), (std::vector<bool>{true, true, true}));
  EXPECT_TRUE(f.to(DType::kFloat32).isSame(f));
  Tensor d = zeros({2, 3}, {DType::kFloat64});
  d.copy_(f32({1, 2, 3}));  // broadcast + convert
  EXPECT_EQ(d.toVector<double>(), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  d.t().copy_(f32({7, 8}));
  EXPECT_EQ(d.toVector<double>(), (std::vector<double>{7, 7, 7, 8, 8, 8}));
  EXPECT_THROW_MSG(d.copy_(f32({1, 2})), Error, "copy_: shapes [2, 3] and [2] cannot be broadcast");
  d.zero_();
  EXPECT_EQ(d.sum().item<double>(), 0.0);
  d.t().fill_(2);
  EXPECT_EQ(d.sum().item<double>(), 12.0);
  Tensor sq = arange(4, {DType::kFloat32}).view({2, 2});
  sq.copy_(sq.t());  // overlapping source in another layout
  EXPECT_EQ(sq.toVector<float>(), (std::vector<float>{0, 2, 1, 3}));
  Tensor h = f.to(DType::kFloat16);
  EXPECT_EQ(h.to(DType::kFloat64).toVector<double>(), (std::vector<double>{1.5, -2.5, 3.75}));
}

TEST(Elementwise, CopyBetweenEveryDtypePair) {
  // Values representable in every dtype (bool aside) survive any conversion chain.
  const std::vector<int64_t> values{0, 1, 2, 100};
  for (int from = 0; from < kNumDTypes; ++from) {
    for (int to = 0; to < kNumDTypes; ++to) {
      const auto src = fromVector<int64_t>(values, {}, {static_cast<DType>(from)});
      const Tensor dst = src.to(static_cast<DType>(to));
      ASSERT_EQ(dst.dtype(), static_cast<DType>(to));
      const bool toBool = static_cast<DType>(to) == DType::kBool ||
                          static_cast<DType>(from) == DType::kBool;
      const std::vector<int64_t> want =
          toBool ? std::vector<int64_t>{0, 1, 1, 1} : values;
      EXPECT_EQ(dst.toVector<int64_t>(), want)
          << dtypeName(static_cast<DType>(from)) << " -> " << dtypeName(static_cast<DType>(to));
    }
  }
}

TEST(Elementwise, EqualAllclose) {
  EXPECT_TRUE(f32({1, 2}).equal(f32({1, 2})));
  EXPECT_FALSE(f32({1, 2}).equal(f32({1, 3})));
  EXPECT_FALSE(f32({1, 2}).equal(f64({1, 2})));  // dtype differs
  EXPECT_FALSE(f32({1, 2}).equal(f32({1, 2}, {2, 1})));
  EXPECT_TRUE(f32({1, 2}).allclose(f32({1.000001f, 2})));
  EXPECT_FALSE(f32({1, 2}).allclose(f32({1.1f, 2})));
  EXPECT_TRUE(f32({1, 2}).allclose(f32({1.1f, 2}), 0.0, 0.2));
  EXPECT_FALSE(f32({NAN}).allclose(f32({NAN})));
  EXPECT_TRUE(f32({INFINITY}).allclose(f32({INFINITY})));
}

// Broadcasting a binary op equals running it on explicitly expanded copies.
RC_GTEST_PROP(ElementwiseProp, BroadcastMatchesExpand, (uint8_t r, uint8_t c, bool rowFirst)) {
  const int64_t rows = r % 5 + 1, cols = c % 5 + 1;
  Tensor m = arange(rows * cols, {DType::kFloat64}).view({rows, cols});
  Tensor v = arange(cols, {DType::kFloat64}).add(1);
  Tensor got = rowFirst ? v.mul(m).sub(m) : m.mul(v).sub(m);
  Tensor expanded = v.expand({rows, cols}).contiguous();
  Tensor want = m.mul(expanded).sub(m);
  RC_ASSERT(got.equal(want));
}

}  // namespace
}  // namespace distlab
