#include <cmath>

#include "tests/tensor/test_util.hpp"

namespace distlab {
namespace {

using testing::i64;

TEST(Creation, Basic) {
  EXPECT_EQ(zeros({2, 2}).toVector<float>(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(ones({3}, {DType::kInt32}).toVector<int32_t>(), (std::vector<int32_t>{1, 1, 1}));
  Tensor f = full({2}, 2.5, {DType::kFloat64});
  EXPECT_EQ(f.dtype(), DType::kFloat64);
  EXPECT_EQ(f.toVector<double>(), (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(full({1}, int64_t{9007199254740993}, {DType::kInt64}).item<int64_t>(),
            9007199254740993);  // integers stay exact
  EXPECT_EQ(empty({2, 3}).sizes(), (Shape{2, 3}));
  EXPECT_EQ(empty({2, 3}).strides(), (Shape{3, 1}));
  EXPECT_EQ(zerosLike(f).dtype(), DType::kFloat64);
  EXPECT_EQ(scalarTensor(3).dim(), 0);
  EXPECT_EQ(scalarTensor(3).item<float>(), 3.0f);
  EXPECT_THROW_MSG(zeros({2, -1}), ValueError, "negative dimension in shape [2, -1]");
}

TEST(Creation, Arange) {
  Tensor a = arange(4);
  EXPECT_EQ(a.dtype(), DType::kInt64);
  EXPECT_EQ(a.toVector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(arange(1.0, 2.0, 0.25).toVector<float>(), (std::vector<float>{1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(arange(3.0, 0.0, -1.0).toVector<float>(), (std::vector<float>{3, 2, 1}));
  EXPECT_THROW_MSG(arange(0.0, 1.0, 0.0), ValueError, "arange: invalid range");
}

TEST(Creation, FromVector) {
  Tensor t = fromVector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.dtype(), DType::kInt32);
  EXPECT_EQ(t.sizes(), (Shape{2, 3}));
  Tensor h = fromVector<double>({0.5, 1.5}, {}, {DType::kFloat16});
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  EXPECT_EQ(h.data<Half>()[1].bits, 0x3e00);
  Tensor b = fromVector<bool>({true, false});
  EXPECT_EQ(b.toVector<int>(), (std::vector<int>{1, 0}));
  EXPECT_THROW_MSG(fromVector<float>({1, 2, 3}, {2, 2}), ValueError,
                   "fromVector: shape [2, 2] needs 4 values but 3 were given");
  EXPECT_THROW_MSG(t.data<float>(), Error, "data<float32>: tensor has dtype int32");
}

TEST(Generator, SeededAndReproducible) {
  Generator a(42), b(42), c(43);
  const uint64_t first = a.nextU64();
  EXPECT_EQ(first, b.nextU64());
  EXPECT_NE(first, c.nextU64());
  a.manualSeed(42);
  EXPECT_EQ(a.nextU64(), first);
  EXPECT_EQ(a.seed(), 42u);
  // splitmix64 seeds xoshiro256**; the outputs are fixed on every platform.
  // Anchors computed independently (a Python transcription of the reference
  // algorithms), so they pin the generator, not just its repeatability.
  Generator zero(0);
  EXPECT_EQ(zero.nextU64(), 0x99ec5f36cb75f2b4ull);
  EXPECT_EQ(zero.nextU64(), 0xbf6e1f784956452aull);
  EXPECT_EQ(zero.nextU64(), 0x1a5f849d4933e6e0ull);
  Generator g42(42);
  EXPECT_EQ(g42.uniform(), static_cast<double>(0x15780b2e0c2ec716ull >> 11) * 0x1.0p-53);
  for (int i = 0; i < 1000; ++i) {
    const double u = a.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    const int64_t r = a.randint(-3, 4);
    ASSERT_GE(r, -3);
    ASSERT_LT(r, 4);
  }
  EXPECT_THROW_MSG(a.randint(2, 2), ValueError, "empty range [2, 2)");
}

TEST(Generator, DistributionMoments) {
  // 20000 draws: the sample mean of U[0,1) has sd 0.002, of N(0,1) 0.007;
  // the tolerances are > 5 sd so the (seeded, deterministic) check is not flaky.
  Generator g(7);
  Tensor u = rand({20000}, g, {DType::kFloat64});
  EXPECT_NEAR(u.mean().item<double>(), 0.5, 0.011);
  Tensor n = randn({20000}, g, {DType::kFloat64});
  EXPECT_NEAR(n.mean().item<double>(), 0.0, 0.04);
  EXPECT_NEAR(n.var({0}).item<double>(), 1.0, 0.06);
  Tensor w = uniform({1000}, -2.0, 3.0, g);
  EXPECT_GE(w.min().item<float>(), -2.0f);
  EXPECT_LT(w.max().item<float>(), 3.0f);
  Tensor ri = randint(0, 5, {1000}, g);
  EXPECT_EQ(ri.dtype(), DType::kInt64);
  EXPECT_EQ(ri.min().item<int64_t>(), 0);
  EXPECT_EQ(ri.max().item<int64_t>(), 4);
}

TEST(Generator, TensorsReproducibleAcrossCalls) {
  Generator g1(123), g2(123);
  EXPECT_TRUE(randn({4, 5}, g1).equal(randn({4, 5}, g2)));
  EXPECT_TRUE(rand({7}, g1).equal(rand({7}, g2)));
  EXPECT_THROW_MSG(randn({2}, g1, {DType::kInt32}), ValueError,
                   "randn: expects a floating point dtype, got int32");
  EXPECT_THROW_MSG(uniform({2}, 1.0, 0.0, g1), ValueError, "expects low <= high");
}

}  // namespace
}  // namespace distlab
