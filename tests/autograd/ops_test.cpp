// Hand-computed forward values and gradients for every differentiable op.
// Float64 throughout; tolerances 1e-12 where results are exact in binary
// (integers, halves), 1e-9 where they involve exp/log/erf (libm accuracy).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::ops {
namespace {

using Vec = std::vector<double>;

Tensor leaf(Vec values, Shape shape = {}) {
  Tensor t = fromVector<double>(values, shape);
  t.setRequiresGrad(true);
  return t;
}

void expectNear(const Tensor& t, const Vec& expected, double tol = 1e-12) {
  ASSERT_TRUE(t.defined());
  Vec got = t.toVector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "index " << i;
}

// Runs backward of sum(out * w) so each output element gets its own weight.
void backwardWeighted(const Tensor& out, Vec weights) {
  autograd::backward(out, fromVector<double>(weights, out.sizes()));
}

TEST(Ops, AddBroadcastSumsGradient) {
  Tensor a = leaf({1, 2, 3, 4}, {2, 2});
  Tensor b = leaf({10, 20}, {2});
  Tensor y = add(a, b, 2.0);
  expectNear(y, {21, 42, 23, 44});
  backwardWeighted(y, {1, 2, 3, 4});
  expectNear(a.grad(), {1, 2, 3, 4});
  expectNear(b.grad(), {2 * (1 + 3), 2 * (2 + 4)});
}

TEST(Ops, SubAndScalarForms) {
  Tensor a = leaf({5, 7});
  Tensor b = leaf({1, 2});
  Tensor y = sub(sub(a, b), 1.0);
  expectNear(y, {3, 4});
  autograd::backward(sum(y));
  expectNear(a.grad(), {1, 1});
  expectNear(b.grad(), {-1, -1});
}

TEST(Ops, MulDiv) {
  Tensor a = leaf({2, 3});
  Tensor b = leaf({4, 8});
  Tensor y = add(mul(a, b), div(a, b));  // grads: b + 1/b, a - a/b^2
  expectNear(y, {8.5, 24.375});
  autograd::backward(sum(y));
  expectNear(a.grad(), {4.25, 8.125});
  expectNear(b.grad(), {2 - 2.0 / 16, 3 - 3.0 / 64});
}

TEST(Ops, NegPowSqrt) {
  Tensor a = leaf({4, 9});
  autograd::backward(sum(add(neg(a), add(pow(a, 3.0), sqrt(a)))));
  // -1 + 3a^2 + 1/(2 sqrt a)
  expectNear(a.grad(), {-1 + 48 + 0.25, -1 + 243 + 1.0 / 6}, 1e-12);
}

TEST(Ops, ExpLogTanhSigmoid) {
  Tensor a = leaf({0.5});
  autograd::backward(sum(exp(a)));
  expectNear(a.grad(), {std::exp(0.5)}, 1e-12);
  Tensor b = leaf({2.0});
  autograd::backward(sum(log(b)));
  expectNear(b.grad(), {0.5});
  Tensor c = leaf({0.0});
  autograd::backward(sum(add(tanh(c), sigmoid(c))));
  expectNear(c.grad(), {1.0 + 0.25});
}

TEST(Ops, ReluGelu) {
  Tensor a = leaf({-1, 2});
  Tensor y = relu(a);
  expectNear(y, {0, 2});
  autograd::backward(sum(y));
  expectNear(a.grad(), {0, 1});
  Tensor g = leaf({0.0, 1.0});
  Tensor z = gelu(g);
  const double cdf1 = 0.5 * (1 + std::erf(1 / std::sqrt(2.0)));
  expectNear(z, {0.0, cdf1}, 1e-9);
  autograd::backward(sum(z));
  // d/dx gelu = cdf(x) + x pdf(x): 0.5 at 0.
  expectNear(g.grad(), {0.5, cdf1 + std::exp(-0.5) / std::sqrt(2 * M_PI)}, 1e-9);
}

TEST(Ops, MatmulAndLinear) {
  Tensor a = leaf({1, 2, 3, 4}, {2, 2});
  Tensor b = leaf({5, 6, 7, 8}, {2, 2});
  Tensor y = matmul(a, b);
  expectNear(y, {19, 22, 43, 50});
  autograd::backward(sum(y));
  expectNear(a.grad(), {11, 15, 11, 15});  // ones @ b^T
  expectNear(b.grad(), {4, 4, 6, 6});      // a^T @ ones
  Tensor x = leaf({1, 2}, {1, 2});
  Tensor w = leaf({1, 0, 0, 1, 1, 1}, {3, 2});
  Tensor bias = leaf({0.5, 0.5, 0.5});
  Tensor out = linear(x, w, bias);
  expectNear(out, {1.5, 2.5, 3.5});
  backwardWeighted(out, {1, 2, 3});
  expectNear(x.grad(), {1 + 3, 2 + 3});
  expectNear(w.grad(), {1, 2, 2, 4, 3, 6});
  expectNear(bias.grad(), {1, 2, 3});
}

TEST(Ops, LinearRejectsMismatchedShapes) {
  EXPECT_THROW(linear(leaf({1, 2, 3}, {1, 3}), leaf({1, 2}, {1, 2})), ValueError);
}

TEST(Ops, SumMean) {
  Tensor a = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor s = sum(a, {1});
  expectNear(s, {6, 15});
  backwardWeighted(s, {1, 2});
  expectNear(a.grad(), {1, 1, 1, 2, 2, 2});
  Tensor b = leaf({1, 2, 3, 4});
  Tensor m = mean(b);
  expectNear(m, {2.5});
  autograd::backward(m);
  expectNear(b.grad(), {0.25, 0.25, 0.25, 0.25});
}

TEST(Ops, ViewsRouteGradients) {
  Tensor a = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor t = transpose(a, 0, 1);  // (3, 2)
  backwardWeighted(t, {1, 2, 3, 4, 5, 6});
  expectNear(a.grad(), {1, 3, 5, 2, 4, 6});
  Tensor b = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor n = narrow(b, 1, 1, 2);
  expectNear(n, {2, 3, 5, 6});
  autograd::backward(sum(n));
  expectNear(b.grad(), {0, 1, 1, 0, 1, 1});
  Tensor c = leaf({1, 2, 3, 4}, {2, 2});
  Tensor sel = select(c, 0, 1);
  expectNear(sel, {3, 4});
  autograd::backward(sum(mul(sel, 2.0)));
  expectNear(c.grad(), {0, 0, 2, 2});
  Tensor d = leaf({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  Tensor p = permute(d, {2, 0, 1});
  EXPECT_EQ(p.sizes(), (Shape{3, 1, 2}));
  backwardWeighted(p, {1, 2, 3, 4, 5, 6});  // p[k,0,j] = d[0,j,k]
  expectNear(d.grad(), {1, 3, 5, 2, 4, 6});
  Tensor e = leaf({1, 2, 3, 4});
  Tensor r = flatten(unsqueeze(reshape(view(e, {2, 2}), {4, 1}), 0));
  EXPECT_EQ(r.sizes(), (Shape{4}));
  backwardWeighted(r, {1, 2, 3, 4});
  expectNear(e.grad(), {1, 2, 3, 4});
}

TEST(Ops, CatStackSplitChunk) {
  Tensor a = leaf({1, 2});
  Tensor b = leaf({3});
  Tensor c = cat({a, b});
  expectNear(c, {1, 2, 3});
  backwardWeighted(c, {10, 20, 30});
  expectNear(a.grad(), {10, 20});
  expectNear(b.grad(), {30});
  Tensor x = leaf({1, 2});
  Tensor y = leaf({3, 4});
  Tensor s = stack({x, y}, 1);  // [[1,3],[2,4]]
  expectNear(s, {1, 3, 2, 4});
  backwardWeighted(s, {1, 2, 3, 4});
  expectNear(x.grad(), {1, 3});
  expectNear(y.grad(), {2, 4});
  Tensor z = leaf({1, 2, 3, 4, 5});
  auto parts = split(z, 2);
  ASSERT_EQ(parts.size(), 3u);
  autograd::backward(add(sum(mul(parts[0], 2.0)), sum(parts[2])));  // middle unused
  expectNear(z.grad(), {2, 2, 0, 0, 1});
  Tensor w = leaf({1, 2, 3, 4});
  auto halves = chunk(w, 2);
  autograd::backward(sum(halves[1]));
  expectNear(w.grad(), {0, 0, 1, 1});
}

TEST(Ops, SoftmaxLogSoftmax) {
  Tensor a = leaf({0.0, 0.0});
  Tensor s = softmax(a, 0);
  expectNear(s, {0.5, 0.5});
  backwardWeighted(s, {1, 0});  // ds0/da = s0(1-s0), -s0 s1
  expectNear(a.grad(), {0.25, -0.25});
  Tensor b = leaf({0.0, 0.0});
  Tensor l = logSoftmax(b, 0);
  expectNear(l, {-std::log(2.0), -std::log(2.0)});
  backwardWeighted(l, {1, 0});  // 1 - s0, -s1
  expectNear(b.grad(), {0.5, -0.5});
}

TEST(Ops, EmbeddingAccumulatesRepeatedRows) {
  Tensor w = leaf({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor idx = fromVector<int64_t>({2, 0, 2}, {3});
  Tensor e = embedding(w, idx);
  expectNear(e, {5, 6, 1, 2, 5, 6});
  autograd::backward(sum(e));
  expectNear(w.grad(), {1, 1, 0, 0, 2, 2});
}

TEST(Ops, LayerNormValuesAndGradSumZero) {
  Tensor x = leaf({1, 3});
  Tensor y = layerNorm(x, {2}, Tensor(), Tensor(), 0.0);
  expectNear(y, {-1, 1}, 1e-12);  // mean 2, var 1
  autograd::backward(sum(y));
  expectNear(x.grad(), {0, 0}, 1e-12);  // normalized output sums to a constant
  Tensor w = leaf({2, 3});
  Tensor b = leaf({1, 1});
  Tensor z = layerNorm(fromVector<double>({1, 3}), {2}, w, b, 0.0);
  expectNear(z, {-1, 4});
  autograd::backward(sum(z));
  expectNear(w.grad(), {-1, 1});
  expectNear(b.grad(), {1, 1});
}

TEST(Ops, BatchNormUpdatesRunningStatsWithUnbiasedVar) {
  Tensor x = leaf({1, 3}, {2, 1});  // one channel: mean 2, biased var 1, unbiased 2
  Tensor rm = zeros({1}, TensorOptions{DType::kFloat64});
  Tensor rv = ones({1}, TensorOptions{DType::kFloat64});
  Tensor y = batchNorm(x, rm, rv, Tensor(), Tensor(), true, 0.1, 0.0);
  expectNear(y, {-1, 1});
  expectNear(rm, {0.2});
  expectNear(rv, {0.9 + 0.2});
  Tensor e =
      batchNorm(fromVector<double>({2.2}, {1, 1}), rm, rv, Tensor(), Tensor(), false, 0.1, 0.0);
  expectNear(e, {(2.2 - 0.2) / std::sqrt(1.1)}, 1e-12);
}

TEST(Ops, DropoutScalesKeptElementsAndIsSeeded) {
  Tensor a = leaf(Vec(1000, 1.0));
  Generator g1(7), g2(7);
  Tensor y1 = dropout(a, 0.25, true, g1);
  Tensor y2 = dropout(a, 0.25, true, g2);
  EXPECT_TRUE(y1.equal(y2));
  int kept = 0;
  for (double v : y1.toVector<double>()) {
    EXPECT_TRUE(v == 0.0 || std::abs(v - 4.0 / 3.0) < 1e-12);
    kept += v != 0.0;
  }
  EXPECT_GT(kept, 650);  // 750 expected; binomial sd ~14
  EXPECT_LT(kept, 850);
  autograd::backward(sum(y1));
  EXPECT_TRUE(a.grad().equal(y1.detach()));  // grad = mask / (1 - p), same as y for x = 1
  Generator g3(7);
  EXPECT_TRUE(dropout(a, 0.25, false, g3).isSame(a));
  EXPECT_THROW(dropout(a, 1.5, true, g3), ValueError);
}

TEST(Ops, MaskedFill) {
  Tensor a = leaf({1, 2, 3});
  Tensor mask = fromVector<bool>({true, false, true});
  Tensor y = maskedFill(a, mask, -5.0);
  expectNear(y, {-5, 2, -5});
  autograd::backward(sum(y));
  expectNear(a.grad(), {0, 1, 0});
}

TEST(Ops, MseLoss) {
  Tensor a = leaf({1, 2});
  Tensor t = fromVector<double>({0, 4});
  Tensor l = mseLoss(a, t);
  expectNear(l, {(1 + 4) / 2.0});
  autograd::backward(l);
  expectNear(a.grad(), {1, -2});  // 2 (a - t) / n
}

TEST(Ops, CrossEntropyWithIgnoreIndex) {
  Tensor logits = leaf({0, 0, 0, 0, 0, 0}, {3, 2});
  Tensor targets = fromVector<int64_t>({0, -100, 1});
  Tensor l = crossEntropy(logits, targets);
  expectNear(l, {std::log(2.0)}, 1e-12);
  autograd::backward(l);
  // (softmax - onehot) / 2 valid rows; the ignored row gets nothing.
  expectNear(logits.grad(), {-0.25, 0.25, 0, 0, 0.25, -0.25}, 1e-12);
  EXPECT_THROW(crossEntropy(logits, fromVector<int64_t>({0, 2, 1})), ValueError);
  EXPECT_TRUE(std::isnan(
      crossEntropy(logits.detach(), fromVector<int64_t>({-100, -100, -100})).item<double>()));
}

TEST(Ops, OutputsGetTheirOwnAutogradSlot) {
  Tensor a = leaf({1, 2});
  Tensor same = dropout(a, 0.0, true, *std::make_unique<Generator>(1));
  EXPECT_TRUE(same.isSame(a));  // identity returns the input itself, as in PyTorch
  Tensor y = reshape(a, {2});   // kernel may return a view; still a new node
  EXPECT_FALSE(y.isLeaf());
  EXPECT_TRUE(a.isLeaf());
}

}  // namespace
}  // namespace distlab::ops
