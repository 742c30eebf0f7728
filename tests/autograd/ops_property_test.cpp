// Gradient properties: every differentiable op's backward matches central
// differences (autograd::gradcheck) on random shapes and values, in float64.
// Tolerance: eps 1e-6 gives truncation error ~1e-12 * f''' and rounding error
// ~1e-10 relative; atol 1e-5 / rtol 1e-3 leave wide margin for both.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "runtime/autograd/gradcheck.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::autograd {
namespace {

const TensorOptions kF64{DType::kFloat64};

Shape genShape(int minDim, int maxDim, int64_t maxSize = 4) {
  const int nd = *rc::gen::inRange(minDim, maxDim + 1);
  Shape s;
  for (int i = 0; i < nd; ++i) s.push_back(*rc::gen::inRange<int64_t>(1, maxSize + 1));
  return s;
}

// Values in [lo, hi) from a generated seed (keeps shrinking cheap).
Tensor genTensor(const Shape& shape, double lo = -2.0, double hi = 2.0) {
  Generator gen(*rc::gen::arbitrary<uint32_t>());
  Tensor t = uniform(shape, lo, hi, gen, kF64);
  t.setRequiresGrad(true);
  return t;
}

// A shape `a` broadcasts against: a suffix of it with some dims set to 1.
Shape genBroadcastable(const Shape& a) {
  const auto keep = *rc::gen::inRange<size_t>(0, a.size() + 1);
  Shape b(a.end() - static_cast<std::ptrdiff_t>(keep), a.end());
  for (auto& s : b) {
    if (*rc::gen::arbitrary<bool>()) s = 1;
  }
  return b;
}

using Fn1 = Tensor (*)(const Tensor&);

void checkUnary(Fn1 op, double lo, double hi) {
  Tensor a = genTensor(genShape(0, 3), lo, hi);
  RC_ASSERT(gradcheck([op](const TensorList& x) { return op(x[0]); }, {a}));
}

RC_GTEST_PROP(OpsGrad, AddSubBroadcast, ()) {
  const Shape sa = genShape(1, 3);
  Tensor a = genTensor(sa);
  Tensor b = genTensor(genBroadcastable(sa));
  const double alpha = *rc::gen::element(1.0, -0.5, 2.0);
  RC_ASSERT(gradcheck([&](const TensorList& x) { return ops::add(x[0], x[1], alpha); }, {a, b}));
  RC_ASSERT(gradcheck([&](const TensorList& x) { return ops::sub(x[1], x[0]); }, {a, b}));
  RC_ASSERT(gradcheck([](const TensorList& x) { return ops::sub(ops::add(x[0], 2.0), 1.5); }, {a}));
}

RC_GTEST_PROP(OpsGrad, MulDivBroadcast, ()) {
  const Shape sa = genShape(1, 3);
  Tensor a = genTensor(sa);
  Tensor b = genTensor(genBroadcastable(sa), 0.5, 2.0);  // away from 0 for div
  RC_ASSERT(gradcheck([](const TensorList& x) { return ops::mul(x[0], x[1]); }, {a, b}));
  RC_ASSERT(gradcheck([](const TensorList& x) { return ops::div(x[0], x[1]); }, {a, b}));
  RC_ASSERT(gradcheck([](const TensorList& x) { return ops::div(ops::mul(x[0], 3.0), 4.0); }, {a}));
}

RC_GTEST_PROP(OpsGrad, UnaryElementwise, ()) {
  checkUnary(&ops::neg, -2, 2);
  checkUnary(&ops::exp, -2, 2);
  checkUnary(&ops::log, 0.2, 3);
  checkUnary(&ops::sqrt, 0.2, 3);
  checkUnary(&ops::tanh, -2, 2);
  checkUnary(&ops::sigmoid, -3, 3);
  checkUnary(&ops::gelu, -3, 3);
  checkUnary(&ops::relu, 0.01, 2);  // away from the kink at 0
  checkUnary(&ops::relu, -2, -0.01);
}

RC_GTEST_PROP(OpsGrad, Pow, ()) {
  Tensor a = genTensor(genShape(0, 3), 0.3, 2.0);
  const double e = *rc::gen::element(2.0, 3.0, 0.5, -1.0, 0.0);
  RC_ASSERT(gradcheck([e](const TensorList& x) { return ops::pow(x[0], e); }, {a}));
}

RC_GTEST_PROP(OpsGrad, MatmulAndLinear, ()) {
  const int64_t n = *rc::gen::inRange(1, 5), k = *rc::gen::inRange(1, 5),
                m = *rc::gen::inRange(1, 5), batch = *rc::gen::inRange(1, 4);
  auto mm = [](const TensorList& x) { return ops::matmul(x[0], x[1]); };
  RC_ASSERT(gradcheck(mm, {genTensor({n, k}), genTensor({k, m})}));
  RC_ASSERT(gradcheck(mm, {genTensor({batch, n, k}), genTensor({batch, k, m})}));
  RC_ASSERT(gradcheck(mm, {genTensor({2, batch, n, k}), genTensor({k, m})}));  // broadcast
  RC_ASSERT(gradcheck(mm, {genTensor({k}), genTensor({k, m})}));
  RC_ASSERT(gradcheck(mm, {genTensor({batch, n, k}), genTensor({k})}));
  auto lin = [](const TensorList& x) { return ops::linear(x[0], x[1], x[2]); };
  RC_ASSERT(gradcheck(lin, {genTensor({n, k}), genTensor({m, k}), genTensor({m})}));
  RC_ASSERT(gradcheck(lin, {genTensor({batch, n, k}), genTensor({m, k}), genTensor({m})}));
  RC_ASSERT(gradcheck([](const TensorList& x) { return ops::linear(x[0], x[1]); },
                      {genTensor({n, k}), genTensor({m, k})}));
}

RC_GTEST_PROP(OpsGrad, Reductions, ()) {
  const Shape s = genShape(1, 3);
  Tensor a = genTensor(s);
  const int64_t d = *rc::gen::inRange<int64_t>(0, static_cast<int64_t>(s.size()));
  const bool keep = *rc::gen::arbitrary<bool>();
  RC_ASSERT(gradcheck([](const TensorList& x) { return ops::sum(x[0]); }, {a}));
  RC_ASSERT(gradcheck([](const TensorList& x) { return ops::mean(x[0]); }, {a}));
  RC_ASSERT(gradcheck([&](const TensorList& x) { return ops::sum(x[0], {d}, keep); }, {a}));
  RC_ASSERT(gradcheck([&](const TensorList& x) { return ops::mean(x[0], {d}, keep); }, {a}));
}

RC_GTEST_PROP(OpsGrad, Views, ()) {
  const Shape s = genShape(2, 3);
  Tensor a = genTensor(s);
  const auto nd = static_cast<int64_t>(s.size());
  const int64_t d0 = *rc::gen::inRange<int64_t>(0, nd), d1 = *rc::gen::inRange<int64_t>(0, nd);
  const int64_t start = *rc::gen::inRange<int64_t>(0, s[0]);
  const int64_t len = *rc::gen::inRange<int64_t>(1, s[0] - start + 1);
  auto g = [&](auto fn) { RC_ASSERT(gradcheck(fn, {a})); };
  g([&](const TensorList& x) { return ops::reshape(x[0], {-1}); });
  g([&](const TensorList& x) { return ops::view(x[0], {a.numel(), 1}); });
  g([&](const TensorList& x) { return ops::transpose(x[0], d0, d1); });
  g([&](const TensorList& x) {
    return ops::permute(x[0], nd == 2 ? Shape{1, 0} : Shape{2, 0, 1});
  });
  g([&](const TensorList& x) { return ops::narrow(x[0], 0, start, len); });
  g([&](const TensorList& x) { return ops::select(x[0], 0, start); });
  g([&](const TensorList& x) { return ops::unsqueeze(x[0], d1); });
  g([&](const TensorList& x) { return ops::squeeze(ops::unsqueeze(x[0], 0), 0); });
  g([&](const TensorList& x) { return ops::flatten(x[0], 0, 1); });
  g([&](const TensorList& x) { return ops::mul(ops::transpose(x[0], 0, 1), 2.0); });
  g([&](const TensorList& x) {
    Shape big = s;
    big.insert(big.begin(), 2);
    return ops::expand(x[0], big);
  });
}

RC_GTEST_PROP(OpsGrad, CatStackSplitChunk, ()) {
  const Shape s = genShape(1, 3);
  const int64_t d = *rc::gen::inRange<int64_t>(0, static_cast<int64_t>(s.size()));
  Shape s2 = s;
  s2[d] = *rc::gen::inRange<int64_t>(1, 4);
  Tensor a = genTensor(s), b = genTensor(s2), c = genTensor(s);
  RC_ASSERT(gradcheck([&](const TensorList& x) { return ops::cat({x[0], x[1]}, d); }, {a, b}));
  RC_ASSERT(gradcheck([&](const TensorList& x) { return ops::stack({x[0], x[1]}, d); }, {a, c}));
  const int64_t piece = *rc::gen::inRange<int64_t>(1, s[d] + 1);
  RC_ASSERT(
      gradcheck(GradcheckFn([&](const TensorList& x) { return ops::split(x[0], piece, d); }), {a}));
  // Only one piece used: the others get zero gradient.
  RC_ASSERT(gradcheck([&](const TensorList& x) { return ops::chunk(x[0], 2, d)[0]; }, {a}));
}

RC_GTEST_PROP(OpsGrad, SoftmaxFamily, ()) {
  const Shape s = genShape(1, 3);
  const int64_t d = *rc::gen::inRange<int64_t>(0, static_cast<int64_t>(s.size()));
  Tensor a = genTensor(s);
  RC_ASSERT(gradcheck([d](const TensorList& x) { return ops::softmax(x[0], d); }, {a}));
  RC_ASSERT(gradcheck([d](const TensorList& x) { return ops::logSoftmax(x[0], d); }, {a}));
}

RC_GTEST_PROP(OpsGrad, EmbeddingAndMaskedFill, ()) {
  const int64_t num = *rc::gen::inRange<int64_t>(1, 6), dim = *rc::gen::inRange<int64_t>(1, 4);
  Tensor w = genTensor({num, dim});
  Generator gen(*rc::gen::arbitrary<uint32_t>());
  Tensor idx = randint(0, num, genShape(1, 2), gen);  // repeats exercise accumulation
  RC_ASSERT(gradcheck([&](const TensorList& x) { return ops::embedding(x[0], idx); }, {w}));
  Tensor a = genTensor(genShape(1, 3));
  Tensor mask = rand(a.sizes(), gen).lt(0.5);
  RC_ASSERT(gradcheck([&](const TensorList& x) { return ops::maskedFill(x[0], mask, -1.0); }, {a}));
}

RC_GTEST_PROP(OpsGrad, Norms, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(2, 5), c = *rc::gen::inRange<int64_t>(1, 4),
                l = *rc::gen::inRange<int64_t>(1, 4);
  Tensor x = genTensor({n, c, l});
  Tensor w = genTensor({l}), b = genTensor({l});
  RC_ASSERT(gradcheck([&](const TensorList& v) { return ops::layerNorm(v[0], {l}, v[1], v[2]); },
                      {x, w, b}));
  RC_ASSERT(gradcheck([&](const TensorList& v) { return ops::layerNorm(v[0], {c, l}); }, {x}));
  Tensor bw = genTensor({c}), bb = genTensor({c});
  RC_ASSERT(gradcheck(
      [&](const TensorList& v) {
        return ops::batchNorm(v[0], Tensor(), Tensor(), v[1], v[2], /*training=*/true);
      },
      {x, bw, bb}));
  Tensor rm = genTensor({c}).detach(), rv = genTensor({c}, 0.5, 2.0).detach();
  RC_ASSERT(gradcheck(
      [&](const TensorList& v) { return ops::batchNorm(v[0], rm, rv, v[1], v[2], false); },
      {genTensor({n, c}), bw, bb}));
}

RC_GTEST_PROP(OpsGrad, DropoutAndLosses, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(1, 5), c = *rc::gen::inRange<int64_t>(1, 5);
  Tensor a = genTensor({n, c});
  const uint32_t seed = *rc::gen::arbitrary<uint32_t>();
  RC_ASSERT(gradcheck(
      [seed](const TensorList& x) {
        Generator gen(seed);  // the same mask at every evaluation
        return ops::dropout(x[0], 0.4, true, gen);
      },
      {a}));
  Tensor target = genTensor({n, c});
  RC_ASSERT(gradcheck([](const TensorList& x) { return ops::mseLoss(x[0], x[1]); }, {a, target}));
  Generator gen(seed);
  Tensor labels = randint(0, c, {n}, gen);
  if (n > 1) labels.select(0, 0).fill_(-100);  // one ignored row
  RC_ASSERT(gradcheck([&](const TensorList& x) { return ops::crossEntropy(x[0], labels); }, {a}));
}

TEST(Gradcheck, DetectsAWrongGradient) {
  // sin-free wrong op: forward x*x, backward claims 3x.
  Tensor a = fromVector<double>({1.0, 2.0});
  a.setRequiresGrad(true);
  auto wrong = [](const TensorList& x) {
    return recordFunction("Wrong", {x[0]}, x[0].mul(x[0]),
                          [x0 = x[0].detach()](const TensorList& g, const std::vector<bool>&) {
                            return TensorList{g[0].mul(x0).mul(3.0)};
                          });
  };
  EXPECT_FALSE(gradcheck(wrong, {a}, 1e-6, 1e-5, 1e-3, /*raiseException=*/false));
  EXPECT_THROW(gradcheck(wrong, {a}), Error);
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return ops::mul(x[0], x[0]); }, {a}));
}

}  // namespace
}  // namespace distlab::autograd
