// Layers: PyTorch default initialization, BatchNorm buffers, Dropout modes, losses.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/autograd/engine.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/nn/layers.hpp"
#include "runtime/nn/loss.hpp"

namespace distlab::nn {
namespace {

TEST(Layers, LinearInitIsUniformWithinOneOverSqrtFanIn) {
  Generator gen(3);
  Linear lin(16, 64, gen);
  const double bound = 1.0 / 4.0;
  for (const auto& name : {"weight", "bias"}) {
    const auto values = lin.param(name).toVector<float>();
    float lo = 1, hi = -1;
    for (float v : values) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    EXPECT_GE(lo, -bound);
    EXPECT_LT(hi, bound);
    EXPECT_LT(lo, -0.8 * bound) << name;  // 1024 / 64 draws reach near the edges
    EXPECT_GT(hi, 0.8 * bound) << name;
  }
  Generator again(3);
  Linear same(16, 64, again);
  EXPECT_TRUE(same.param("weight").equal(lin.param("weight")));
  EXPECT_TRUE(same.param("bias").equal(lin.param("bias")));
}

TEST(Layers, LinearForwardMatchesFormula) {
  Generator gen(0);
  Linear lin(2, 1, gen);
  lin.setParameter("weight", fromVector<float>({1, -1}, {1, 2}));
  lin.setParameter("bias", fromVector<float>({0.5}));
  EXPECT_EQ(lin.forward(fromVector<float>({3, 1}, {1, 2})).toVector<float>(),
            (std::vector<float>{2.5}));
  EXPECT_THROW(Linear(0, 1, gen), ValueError);
}

TEST(Layers, EmbeddingInitIsStandardNormal) {
  Generator gen(5);
  Embedding emb(100, 100, gen);
  const Tensor& w = emb.param("weight");
  EXPECT_NEAR(w.mean().item<double>(), 0.0, 0.05);  // 10^4 samples: sd of mean 0.01
  EXPECT_NEAR(w.var({0, 1}).item<double>(), 1.0, 0.05);
  Tensor out = emb.forward(fromVector<int64_t>({1, 3}, {1, 2}));
  EXPECT_EQ(out.sizes(), (Shape{1, 2, 100}));
}

TEST(Layers, LayerNormInitAndOutput) {
  LayerNorm ln({4});
  EXPECT_TRUE(ln.param("weight").equal(ones({4})));
  EXPECT_TRUE(ln.param("bias").equal(zeros({4})));
  Tensor y = ln.forward(fromVector<float>({1, 2, 3, 4}, {1, 4}));
  EXPECT_NEAR(y.mean().item<double>(), 0.0, 1e-6);
  // var 1.25: (x - 2.5) / sqrt(1.25 + 1e-5)
  EXPECT_NEAR(y.toVector<float>()[0], -1.5 / std::sqrt(1.25 + 1e-5), 1e-5);
}

TEST(Layers, BatchNorm1dTracksRunningStats) {
  BatchNorm1d bn(2);
  Tensor x = fromVector<float>({1, 10, 3, 30}, {2, 2});
  bn.forward(x);
  bn.forward(x);
  EXPECT_EQ(bn.buffer("num_batches_tracked").item<int64_t>(), 2);
  // mean (2, 20); unbiased var (2, 200); two updates with momentum 0.1
  auto rm = bn.buffer("running_mean").toVector<float>();
  auto rv = bn.buffer("running_var").toVector<float>();
  EXPECT_NEAR(rm[0], 2 * (1 - 0.81), 1e-5);
  EXPECT_NEAR(rm[1], 20 * (1 - 0.81), 1e-4);
  EXPECT_NEAR(rv[0], 0.81 + 2 * 0.19, 1e-5);
  EXPECT_NEAR(rv[1], 0.81 + 200 * 0.19, 1e-3);
  bn.eval();
  Tensor y = bn.forward(fromVector<float>({rm[0], rm[1]}, {1, 2}));
  EXPECT_NEAR(y.toVector<float>()[0], 0.0, 1e-6);
  EXPECT_EQ(bn.buffer("num_batches_tracked").item<int64_t>(), 2);
}

TEST(Layers, DropoutOnlyInTraining) {
  Dropout drop(0.5, 11);
  Tensor x = ones({200});
  Tensor y = drop.forward(x);
  int zerosCount = 0;
  for (float v : y.toVector<float>()) zerosCount += v == 0.0f;
  EXPECT_GT(zerosCount, 60);  // 100 expected, sd ~7
  EXPECT_LT(zerosCount, 140);
  drop.eval();
  EXPECT_TRUE(drop.forward(x).equal(x));
  EXPECT_THROW(Dropout(-0.1), ValueError);
}

TEST(Layers, ActivationsAndLossModules) {
  ReLU relu;
  GELU gelu;
  Tensor x = fromVector<float>({-1, 1});
  EXPECT_EQ(relu.forward(x).toVector<float>(), (std::vector<float>{0, 1}));
  EXPECT_NEAR(gelu.forward(x).toVector<float>()[1], 0.8413447, 1e-6);
  MSELoss mse;
  EXPECT_EQ(mse.call({x, zeros({2})})[0].item<float>(), 1.0f);
  CrossEntropyLoss ce;
  Tensor logits = zeros({2, 4});
  EXPECT_NEAR(ce.call({logits, fromVector<int64_t>({0, 3})})[0].item<float>(), std::log(4.0), 1e-6);
  EXPECT_THROW(ce.call({logits}), ValueError);
}

}  // namespace
}  // namespace distlab::nn
