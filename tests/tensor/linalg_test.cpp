#include "runtime/tensor/parallel.hpp"
#include "tests/tensor/test_util.hpp"

#include <rapidcheck/gtest.h>

namespace distlab {
namespace {

using testing::f32;
using testing::f64;
using testing::i64;

// Reference product in float64 with plain loops.
Tensor naiveMm(const Tensor& a, const Tensor& b) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const auto av = a.toVector<double>();
  const auto bv = b.toVector<double>();
  std::vector<double> out(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) out[i * n + j] += av[i * k + p] * bv[p * n + j];
  return fromVector<double>(out, {m, n});
}

TEST(Linalg, MmExact) {
  Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = f32({7, 8, 9, 10, 11, 12}, {3, 2});
  EXPECT_EQ(a.mm(b).toVector<float>(), (std::vector<float>{58, 64, 139, 154}));
  EXPECT_EQ(a.mm(b).sizes(), (Shape{2, 2}));
  // Transposed operands take the CblasTrans path (no copy) and agree.
  Tensor bt = f32({7, 9, 11, 8, 10, 12}, {2, 3}).t();
  EXPECT_FALSE(bt.isContiguous());
  EXPECT_EQ(a.mm(bt).toVector<float>(), (std::vector<float>{58, 64, 139, 154}));
  Tensor at = f32({1, 4, 2, 5, 3, 6}, {3, 2}).t();
  EXPECT_EQ(at.mm(bt).toVector<float>(), (std::vector<float>{58, 64, 139, 154}));
  // A layout cblas cannot read (stepped slice) is copied first.
  Tensor stepped = f32({1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0}, {2, 6}).slice(1, 0, 6, 2);
  EXPECT_EQ(stepped.mm(b).toVector<float>(), (std::vector<float>{58, 64, 139, 154}));
  EXPECT_EQ(a.to(DType::kFloat64).mm(b.to(DType::kFloat64)).toVector<double>(),
            (std::vector<double>{58, 64, 139, 154}));
}

TEST(Linalg, MmDtypes) {
  Tensor a = i64({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(a.mm(a).toVector<int64_t>(), (std::vector<int64_t>{7, 10, 15, 22}));
  EXPECT_EQ(a.to(DType::kInt32).mm(a.to(DType::kInt32)).dtype(), DType::kInt32);
  Tensor h = a.to(DType::kFloat16);
  EXPECT_EQ(h.mm(h).dtype(), DType::kFloat16);
  EXPECT_EQ(h.mm(h).toVector<float>(), (std::vector<float>{7, 10, 15, 22}));
  Tensor bf = a.to(DType::kBFloat16);
  EXPECT_EQ(bf.mm(bf).toVector<float>(), (std::vector<float>{7, 10, 15, 22}));
}

TEST(Linalg, Errors) {
  Tensor a = zeros({2, 3});
  EXPECT_THROW_MSG(a.mm(zeros({2, 3})), Error, "mm: shapes [2, 3] and [2, 3] cannot be multiplied (3 != 2)");
  EXPECT_THROW_MSG(a.mm(zeros({3})), Error, "mm: expected 2-D tensors, got 2-D and 1-D");
  EXPECT_THROW_MSG(a.mm(zeros({3, 2}, {DType::kFloat64})), Error,
                   "mm: expected both operands to have the same dtype, but got float32 != float64");
  EXPECT_THROW_MSG(zeros({2, 2, 3}).bmm(zeros({3, 3, 2})), Error, "bmm: batch sizes differ");
  EXPECT_THROW_MSG(a.matmul(zeros({4})), Error, "matmul: shapes [2, 3] and [4] cannot be multiplied");
  EXPECT_THROW_MSG(scalarTensor(1.0).matmul(a), Error, "both arguments need at least 1 dimension");
}

TEST(Linalg, MatmulRules) {
  Tensor v = f32({1, 2, 3});
  Tensor m = f32({1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_EQ(v.matmul(v).dim(), 0);  // dot
  EXPECT_EQ(v.matmul(v).item<float>(), 14.0f);
  EXPECT_EQ(v.matmul(m).sizes(), (Shape{2}));  // vector-matrix
  EXPECT_EQ(v.matmul(m).toVector<float>(), (std::vector<float>{22, 28}));
  EXPECT_EQ(m.t().matmul(v).toVector<float>(), (std::vector<float>{22, 28}));  // matrix-vector
  // Batched [2, 1, 3] x [3, 2]: the batch folds into one GEMM.
  Tensor batch = f32({1, 2, 3, 0, 1, 0}, {2, 1, 3});
  Tensor r = batch.matmul(m);
  EXPECT_EQ(r.sizes(), (Shape{2, 1, 2}));
  EXPECT_EQ(r.toVector<float>(), (std::vector<float>{22, 28, 3, 4}));
  // Broadcast batch dims: [2, 1, 1, 3] x [3, 3, 2] -> [2, 3, 1, 2].
  Tensor many = m.unsqueeze(0).expand({3, 3, 2}).mul(f32({1, 2, 3}, {3, 1, 1}));
  Tensor br = batch.unsqueeze(1).matmul(many);
  EXPECT_EQ(br.sizes(), (Shape{2, 3, 1, 2}));
  EXPECT_EQ(br.toVector<float>(),
            (std::vector<float>{22, 28, 44, 56, 66, 84, 3, 4, 6, 8, 9, 12}));
  // 1-D x batched.
  EXPECT_EQ(v.matmul(many).sizes(), (Shape{3, 2}));
  EXPECT_EQ(v.matmul(many).toVector<float>(), (std::vector<float>{22, 28, 44, 56, 66, 84}));
  // bmm
  Tensor bm = batch.bmm(many.narrow(0, 0, 2));
  EXPECT_EQ(bm.toVector<float>(), (std::vector<float>{22, 28, 6, 8}));
  // Empty inner dim gives zeros.
  EXPECT_EQ(zeros({2, 0}).mm(zeros({0, 3})).toVector<float>(), std::vector<float>(6, 0.0f));
}

TEST(Linalg, LinearForwardShapeUsesTransposedWeight) {
  // x.matmul(w.t()) as nn.Linear computes it, compared with a naive product.
  Generator g(5);
  Tensor x = randint(-3, 4, {4, 8}, g, {DType::kFloat32});
  Tensor w = randint(-3, 4, {5, 8}, g, {DType::kFloat32});
  Tensor y = x.matmul(w.t());
  EXPECT_TRUE(y.to(DType::kFloat64).equal(naiveMm(x, w.t().contiguous())));
}

TEST(Linalg, SmallRowNtProductTakesSwappedPath) {
  // M = 3 rows against a transposed [16, 8] weight: computed as (W . x^T)^T
  // (Note [Small-M NT GEMM]); the result must still be a plain contiguous [3, 16].
  Generator g(6);
  Tensor x = randint(-4, 5, {3, 8}, g, {DType::kFloat32});
  Tensor w = randint(-4, 5, {16, 8}, g, {DType::kFloat32});
  Tensor y = x.mm(w.t());
  EXPECT_TRUE(y.isContiguous());
  EXPECT_TRUE(y.to(DType::kFloat64).equal(naiveMm(x, w.t().contiguous())));
  Tensor xb = randint(-4, 5, {2, 3, 8}, g, {DType::kFloat64});
  Tensor wb = randint(-4, 5, {2, 16, 8}, g, {DType::kFloat64});
  Tensor yb = xb.bmm(wb.transpose(1, 2));
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(yb.select(0, i).equal(naiveMm(xb.select(0, i), wb.select(0, i).t().contiguous())));
  }
}

TEST(Linalg, NumThreads) {
  const int before = getNumThreads();
  setNumThreads(1);
  EXPECT_EQ(getNumThreads(), 1);
  EXPECT_EQ(f32({1, 2, 3, 4}, {2, 2}).mm(f32({1, 0, 0, 1}, {2, 2})).toVector<float>(),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_THROW_MSG(setNumThreads(0), ValueError, "setNumThreads: threads must be >= 1, got 0");
  setNumThreads(before);
}

// Small-integer products are exact in float64 whatever the layout and blocking.
RC_GTEST_PROP(LinalgProp, MatmulMatchesNaive, (uint8_t mr, uint8_t kr, uint8_t nr, bool ta, bool tb)) {
  const int64_t m = mr % 7 + 1, k = kr % 7 + 1, n = nr % 7 + 1;
  Generator g(static_cast<uint64_t>(m * 100 + k * 10 + n));
  Tensor a = randint(-5, 6, ta ? Shape{k, m} : Shape{m, k}, g, {DType::kFloat64});
  Tensor b = randint(-5, 6, tb ? Shape{n, k} : Shape{k, n}, g, {DType::kFloat64});
  if (ta) a = a.t();
  if (tb) b = b.t();
  RC_ASSERT(a.matmul(b).equal(naiveMm(a, b)));
  RC_ASSERT(a.to(DType::kFloat32).matmul(b.to(DType::kFloat32)).to(DType::kFloat64).equal(naiveMm(a, b)));
}

}  // namespace
}  // namespace distlab
