// Whole models on CUDA against the same models on the CPU: a GPT-style decoder
// (tied and untied head; embedding, LayerNorm, causal attention, GELU MLP,
// cross-entropy) trained with AdamW, and an MLP with SGD + momentum and Adam,
// several steps each from identical weights and data.
//
// Tolerance: every GPU kernel sums in its own order (cuBLAS blocks its GEMMs,
// reductions go one thread per output), so each float32 result differs from
// the CPU's by a few ulps of its inputs' magnitude, and gradients (~1e-2 here)
// differ by ~1e-8 absolute. SGD passes that on scaled by lr. Adam's update
// lr * m / (sqrt(v) + eps) changes by at most lr / eps per unit of gradient
// error; with the default eps = 1e-8 an element whose exact gradient is 0
// (the key bias of attention: softmax ignores a constant added to every
// score) or tiny moves by +-lr on either device from rounding noise alone, so
// the tests use eps = 1e-4: sensitivity lr / eps = 100, i.e. ~1e-6 per step,
// ~4e-6 after kSteps = 4, under atol 1e-5; parameters of magnitude ~1 also
// get rtol 1e-4. Losses agree to rtol 1e-4. A wrong kernel is off by O(1).
#include <vector>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/nn/loss.hpp"
#include "runtime/nn/models/gpt.hpp"
#include "runtime/nn/models/mlp.hpp"
#include "runtime/optim/adam.hpp"
#include "runtime/optim/sgd.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace distlab::gputest {
namespace {

using CudaModels = CudaTest;

constexpr int kSteps = 4;
constexpr double kModelRtol = 1e-4;
constexpr double kModelAtol = 1e-5;
constexpr double kAdamEps = 1e-4;

// Copies `from`'s parameters and buffers into `to` (same architecture).
void copyState(nn::Module& from, nn::Module& to) {
  autograd::NoGradGuard noGrad;
  const auto src = from.namedParameters();
  const auto dst = to.namedParameters();
  ASSERT_EQ(src.size(), dst.size());
  for (size_t i = 0; i < src.size(); ++i) Tensor(dst[i].second).copy_(src[i].second);
}

void expectSameParameters(nn::Module& gpu, nn::Module& cpu) {
  const auto g = gpu.namedParameters();
  const auto c = cpu.namedParameters();
  ASSERT_EQ(g.size(), c.size());
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_TRUE(g[i].second.device().isCuda()) << g[i].first;
    EXPECT_TRUE(g[i].second.to(Device::cpu()).allclose(c[i].second, kModelRtol, kModelAtol))
        << g[i].first << " differs after " << kSteps << " steps";
  }
}

// Tokens of a counting sequence (batch rows of t + 1 ids), the GPT's data.
Tensor countingTokens(int64_t batch, int64_t t, int64_t vocab, Generator& gen) {
  std::vector<int64_t> tokens;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = gen.randint(0, vocab);
    for (int64_t i = 0; i <= t; ++i) tokens.push_back((start + i) % vocab);
  }
  return fromVector<int64_t>(tokens, {batch, t + 1});
}

double gptStep(nn::Gpt& gpt, optim::Optimizer& opt, const Tensor& all) {
  const auto& o = gpt.options();
  const int64_t batch = all.size(0), t = all.size(1) - 1;
  Tensor input = all.narrow(1, 0, t).contiguous();
  Tensor target = all.narrow(1, 1, t).contiguous().reshape({-1});
  opt.zeroGrad();
  Tensor logits = gpt.forward(input);
  Tensor loss = nn::crossEntropyLoss(ops::reshape(logits, {batch * t, o.vocabSize}), target);
  autograd::backward(loss);
  opt.step();
  return loss.item<double>();
}

TEST_F(CudaModels, GptWithAdamWTrainsLikeTheCpu) {
  for (bool tied : {false, true}) {
    nn::GptOptions o{.vocabSize = 32, .blockSize = 8, .nEmbd = 32, .nHead = 4, .nLayer = 2};
    o.tiedHead = tied;
    Generator g1(11), g2(11), data(5);
    nn::Gpt cpu(o, g1);
    nn::Gpt gpu(o, g2);
    gpu.toEmpty(Device::cuda(0));
    copyState(cpu, gpu);
    optim::AdamWOptions ao;
    ao.lr = 1e-2;
    ao.eps = kAdamEps;
    optim::AdamW cpuOpt(cpu.parameters(), ao);
    optim::AdamW gpuOpt(gpu.parameters(), ao);
    for (int step = 0; step < kSteps; ++step) {
      Tensor tokens = countingTokens(8, 8, o.vocabSize, data);
      const double lc = gptStep(cpu, cpuOpt, tokens);
      const double lg = gptStep(gpu, gpuOpt, tokens.to(Device::cuda(0)));
      EXPECT_NEAR(lg, lc, kModelRtol * std::abs(lc)) << "tied=" << tied << " step " << step;
    }
    expectSameParameters(gpu, cpu);
  }
}

TEST_F(CudaModels, MlpWithSgdMomentumAndAdamTrainsLikeTheCpu) {
  for (bool adam : {false, true}) {
    Generator g1(3), g2(3), data(7);
    nn::Mlp cpu({16, 64, 64, 8}, g1);
    nn::Mlp gpu({16, 64, 64, 8}, g2);
    gpu.toEmpty(Device::cuda(0));
    copyState(cpu, gpu);
    auto make = [&](nn::Module& m) -> std::unique_ptr<optim::Optimizer> {
      if (adam) {
        return std::make_unique<optim::Adam>(m.parameters(),
                                             optim::AdamOptions{.lr = 1e-2, .eps = kAdamEps});
      }
      return std::make_unique<optim::SGD>(m.parameters(),
                                          optim::SgdOptions{.lr = 0.05, .momentum = 0.9});
    };
    auto cpuOpt = make(cpu), gpuOpt = make(gpu);
    for (int step = 0; step < kSteps; ++step) {
      Tensor x = randn({32, 16}, data);
      Tensor t = randint(0, 8, {32}, data);
      for (auto [model, opt, dev] : {std::tuple<nn::Module*, optim::Optimizer*, Device>{
                                         &cpu, cpuOpt.get(), Device::cpu()},
                                     {&gpu, gpuOpt.get(), Device::cuda(0)}}) {
        opt->zeroGrad();
        Tensor loss = nn::crossEntropyLoss(model->forward(x.to(dev)), t.to(dev));
        autograd::backward(loss);
        opt->step();
      }
    }
    expectSameParameters(gpu, cpu);
  }
}

}  // namespace
}  // namespace distlab::gputest
