// Models on the meta device (Note [Meta models]): built shape-only, trained
// shape-only through nn, autograd and optim, then materialised on the CPU
// with toEmpty + initializeParameters and compared with a CPU-built model.
#include <gtest/gtest.h>

#include "runtime/autograd/detail/op_util.hpp"
#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/nn/loss.hpp"
#include "runtime/nn/models/gpt.hpp"
#include "runtime/nn/models/mlp.hpp"
#include "runtime/optim/adam.hpp"
#include "runtime/optim/sgd.hpp"
#include "runtime/tensor/dispatch.hpp"

namespace distlab::nn {
namespace {

constexpr uint64_t kSeed = 1234;

GptOptions smallGpt(bool tied) {
  return GptOptions{.vocabSize = 16, .blockSize = 8, .nEmbd = 16, .nHead = 2, .nLayer = 2,
                    .tiedHead = tied};
}

template <typename M, typename Options>
std::shared_ptr<M> buildOn(Device device, const Options& options) {
  Generator gen(kSeed);
  DefaultDeviceGuard guard(device);
  return std::make_shared<M>(options, gen);
}

// Every entry of both state dicts has the same name, shape, dtype and values.
void expectSameState(Module& a, Module& b) {
  const StateDict sa = a.stateDict();
  const StateDict sb = b.stateDict();
  ASSERT_EQ(sa.keys(), sb.keys());
  for (const std::string& key : sa.keys()) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(sa.at(key).device().isCpu());
    EXPECT_TRUE(sa.at(key).equal(sb.at(key)));  // exact: same draws, same order
  }
}

TEST(MetaModel, GptBuiltOnMetaHasShapesAndNoMemory) {
  auto meta = buildOn<Gpt>(Device::meta(), smallGpt(false));
  auto cpu = buildOn<Gpt>(Device::cpu(), smallGpt(false));
  const auto mp = meta->namedParameters();
  const auto cp = cpu->namedParameters();
  ASSERT_EQ(mp.size(), cp.size());
  for (size_t i = 0; i < mp.size(); ++i) {
    EXPECT_EQ(mp[i].first, cp[i].first);
    EXPECT_TRUE(mp[i].second.device().isMeta());
    EXPECT_EQ(mp[i].second.storage()->data(), nullptr);
    EXPECT_EQ(mp[i].second.sizes(), cp[i].second.sizes());
    EXPECT_TRUE(mp[i].second.requiresGrad());
  }
}

TEST(MetaModel, TrainingStepRunsShapeOnlyThroughNnAutogradAndOptim) {
  auto gpt = buildOn<Gpt>(Device::meta(), smallGpt(false));
  optim::AdamW opt(gpt->parameters());
  const TensorOptions ids{DType::kInt64, Device::meta()};
  Tensor idx = empty({2, 8}, ids);
  Tensor targets = empty({16}, ids);
  Tensor logits = gpt->forward(idx);
  EXPECT_EQ(logits.sizes(), (Shape{2, 8, 16}));
  ASSERT_TRUE(logits.requiresGrad());
  Tensor loss = crossEntropyLoss(ops::reshape(logits, {16, 16}), targets);
  EXPECT_TRUE(loss.device().isMeta());
  EXPECT_EQ(loss.dim(), 0);
  ASSERT_TRUE(loss.requiresGrad());
  autograd::backward(loss);
  for (const auto& [name, p] : gpt->namedParameters()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(p.grad().defined());
    EXPECT_TRUE(p.grad().device().isMeta());
    EXPECT_EQ(p.grad().sizes(), p.sizes());
  }
  opt.step();
  opt.zeroGrad();

  auto mlp = buildOn<Mlp>(Device::meta(), MlpOptions{8, 16, 2, 4});
  optim::SGD sgd(mlp->parameters(), {.lr = 0.1, .momentum = 0.9});
  Tensor out = mlp->forward(empty({5, 8}, TensorOptions{}.withDevice(Device::meta())));
  autograd::backward(ops::mseLoss(out, empty({5, 4}, TensorOptions{}.withDevice(Device::meta()))));
  sgd.step();
  EXPECT_EQ(mlp->parameters().front().grad().sizes(), (Shape{16, 8}));
}

TEST(MetaModel, ComposedCrossEntropyForDevicesMatchesTheCpuKernel) {
  // The device path of crossEntropy, run on CPU tensors, against the fused CPU
  // kernel: loss and gradient agree to float32 rounding (1e-6 relative).
  Generator gen(3);
  Tensor logits = randn({6, 5}, gen).setRequiresGrad(true);
  Tensor same = logits.detach().clone().setRequiresGrad(true);
  Tensor targets = fromVector<int64_t>({0, 4, -100, 2, 2, 1});
  Tensor fused = ops::crossEntropy(logits, targets, -100);
  Tensor composed = ops::detail::crossEntropyComposed(same, targets, -100);
  EXPECT_TRUE(composed.allclose(fused, 1e-6, 1e-7));
  autograd::backward(fused);
  autograd::backward(composed);
  EXPECT_TRUE(same.grad().allclose(logits.grad(), 1e-5, 1e-7));
}

TEST(MetaModel, GptMaterialisedOnCpuEqualsGptBuiltOnCpu) {
  for (bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied head" : "untied head");
    auto meta = buildOn<Gpt>(Device::meta(), smallGpt(tied));
    auto cpu = buildOn<Gpt>(Device::cpu(), smallGpt(tied));
    meta->toEmpty(Device::cpu());
    Generator gen(kSeed);
    initializeParameters(*meta, gen);
    expectSameState(*meta, *cpu);
    if (tied) {
      EXPECT_TRUE(meta->namedChildren().back().second->param("weight").isSame(
          meta->child("wte")->param("weight")));
    }
    Generator data(5);
    Tensor idx = randint(0, 16, {2, 8}, data);
    EXPECT_TRUE(meta->forward(idx).equal(cpu->forward(idx)));
    for (const auto& p : meta->parameters()) EXPECT_TRUE(p.requiresGrad());
  }
}

TEST(MetaModel, BuffersAreMaterialisedAndReset) {
  std::shared_ptr<BatchNorm1d> meta;
  {
    DefaultDeviceGuard guard(Device::meta());
    meta = std::make_shared<BatchNorm1d>(6);
  }
  auto cpu = std::make_shared<BatchNorm1d>(6);
  EXPECT_TRUE(meta->buffer("running_var").device().isMeta());
  meta->toEmpty(Device::cpu());
  Generator gen(kSeed);
  initializeParameters(*meta, gen);
  expectSameState(*meta, *cpu);
}

}  // namespace
}  // namespace distlab::nn
