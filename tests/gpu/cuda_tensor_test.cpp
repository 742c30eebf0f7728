// The tensor, nn, autograd and optim layers on CUDA tensors against the CPU.
// Tolerances: float32 kernels on the GPU reorder sums (and cuBLAS uses its own
// blocking), so results match the CPU to 1e-5 relative, 1e-6 absolute.
#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/nn/loss.hpp"
#include "runtime/nn/models/mlp.hpp"
#include "runtime/optim/sgd.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace distlab::gputest {
namespace {

using CudaTensor = CudaTest;

constexpr double kRtol = 1e-5;
constexpr double kAtol = 1e-6;

Tensor randomCpu(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, gen);
}

void expectClose(const Tensor& gpu, const Tensor& cpu) {
  ASSERT_TRUE(gpu.device().isCuda());
  EXPECT_EQ(gpu.sizes(), cpu.sizes());
  EXPECT_EQ(gpu.dtype(), cpu.dtype());
  EXPECT_TRUE(gpu.to(Device::cpu()).allclose(cpu, kRtol, kAtol)) << gpu << "\nvs\n" << cpu;
}

TEST_F(CudaTensor, CopiesAndFactoriesGiveTheCpuValues) {
  Tensor cpu = randomCpu({3, 5}, 1);
  Tensor gpu = cpu.to(Device::cuda(0));
  EXPECT_TRUE(gpu.to(Device::cpu()).equal(cpu));
  EXPECT_TRUE(gpu.t().contiguous().to(Device::cpu()).equal(cpu.t().contiguous()));
  EXPECT_TRUE(gpu.to(DType::kFloat64).to(Device::cpu()).equal(cpu.to(DType::kFloat64)));
  Generator a(9), b(9);  // same seed, same numbers on both devices
  EXPECT_TRUE(randn({64}, a, onGpu()).to(Device::cpu()).equal(randn({64}, b)));
  EXPECT_TRUE(zeros({4}, onGpu()).to(Device::cpu()).equal(zeros({4})));
}

TEST_F(CudaTensor, ElementwiseReductionsAndSoftmaxMatchCpu) {
  Tensor x = randomCpu({4, 6}, 2), y = randomCpu({6}, 3);
  Tensor gx = x.to(Device::cuda(0)), gy = y.to(Device::cuda(0));
  expectClose(gx.add(gy, 0.5), x.add(y, 0.5));
  expectClose(gx.sub(gy).mul(gx).div(gy.abs().add(1.0)), x.sub(y).mul(x).div(y.abs().add(1.0)));
  expectClose(gx.relu(), x.relu());
  expectClose(gx.gelu(), x.gelu());
  expectClose(gx.exp().log(), x.exp().log());
  expectClose(gx.clamp(-0.5, 0.5), x.clamp(-0.5, 0.5));
  EXPECT_TRUE(gx.gt(gy).to(Device::cpu()).equal(x.gt(y)));
  expectClose(gx.sum({1}), x.sum({1}));
  expectClose(gx.mean(), x.mean());
  expectClose(gx.amax({0}), x.amax({0}));
  EXPECT_TRUE(gx.argmax(1).to(Device::cpu()).equal(x.argmax(1)));
  expectClose(gx.softmax(1), x.softmax(1));
  expectClose(gx.logSoftmax(0), x.logSoftmax(0));
  expectClose(gx.matmul(gx.t()), x.matmul(x.t()));
}

TEST_F(CudaTensor, MlpTrainingStepMatchesCpu) {
  Generator g1(4), g2(4);
  nn::Mlp cpu({8, 16, 2, 4}, g1);
  nn::Mlp gpu({8, 16, 2, 4}, g2);
  gpu.toEmpty(Device::cuda(0));
  {
    autograd::NoGradGuard noGrad;
    const auto cp = cpu.parameters();
    const auto gp = gpu.parameters();
    for (size_t i = 0; i < cp.size(); ++i) Tensor(gp[i]).copy_(cp[i]);
  }
  Tensor x = randomCpu({5, 8}, 6);
  Tensor t = fromVector<int64_t>({0, 3, 1, 2, 3});
  optim::SGD so(cpu.parameters(), {.lr = 0.1});
  optim::SGD go(gpu.parameters(), {.lr = 0.1});
  Tensor lc = nn::crossEntropyLoss(cpu.forward(x), t);
  Tensor lg = nn::crossEntropyLoss(gpu.forward(x.to(Device::cuda(0))), t.to(Device::cuda(0)));
  expectClose(lg, lc);
  autograd::backward(lc);
  autograd::backward(lg);
  so.step();
  go.step();
  const auto cp = cpu.parameters();
  const auto gp = gpu.parameters();
  for (size_t i = 0; i < cp.size(); ++i) expectClose(gp[i], cp[i]);
}

}  // namespace
}  // namespace distlab::gputest
