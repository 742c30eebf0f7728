// layer_compute in training scenarios (Note [Emulated layer compute],
// emulator/workloads/layer_compute.hpp): every Linear sleeps in its forward
// and in its backward, before its own gradients are accumulated, as
// "compute" trace spans at least as long as asked; and the values of the
// gradients are those of the model without the sleeps, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "emulator/workloads/layer_compute.hpp"
#include "emulator/workloads/scenario_data.hpp"
#include "emulator/workloads/training_model.hpp"
#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/hooks.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::emulator {
namespace {

TrainingWorkload smallMlp() {
  TrainingWorkload tr;
  tr.model = "mlp";
  tr.sizes = {4, 8, 8, 3};
  tr.batchSize = 5;
  return tr;
}

int linearLayers(nn::Module& model) {
  int n = 0;
  for (auto& [name, m] : model.namedModules()) n += m->typeName() == "Linear";
  return n;
}

// One forward and backward of the scenario loss on rank 0's first batch.
std::vector<Tensor> gradients(nn::Module& model, const TrainingWorkload& tr) {
  auto [x, y] = scenarioBatch(tr, 1, 0, 0);
  autograd::backward(scenarioLoss(model.forwardAll({x}), y, true));
  std::vector<Tensor> grads;
  for (const Tensor& p : model.parameters()) grads.push_back(p.grad());
  return grads;
}

struct EmulatedSpans {
  std::vector<int64_t> forwardDurNs, backwardDurNs, backwardEndNs;
};

EmulatedSpans emulatedSpans(const trace::Snapshot& snap) {
  EmulatedSpans s;
  for (const trace::Event& e : snap.events) {
    if (e.phase != 'X' || e.category != trace::Category::kCompute) continue;
    if (e.name == "emulated forward") s.forwardDurNs.push_back(e.durNs);
    if (e.name == "emulated backward") {
      s.backwardDurNs.push_back(e.durNs);
      s.backwardEndNs.push_back(e.tsNs + e.durNs);
    }
  }
  return s;
}

TEST(LayerCompute, NothingWhenBothTimesAreZero) {
  auto model = buildScenarioModel(smallMlp());
  EXPECT_EQ(emulateLayerCompute(*model, LayerCompute{}), 0);
}

TEST(LayerCompute, EveryLinearSleepsInForwardAndBackwardAndValuesStay) {
  const TrainingWorkload tr = smallMlp();
  auto plain = buildScenarioModel(tr);
  auto emulated = buildScenarioModel(tr);
  const LayerCompute compute{2.0, 3.0};
  const int layers = linearLayers(*emulated);
  ASSERT_GE(layers, 3);
  EXPECT_EQ(emulateLayerCompute(*emulated, compute), layers);

  // Each weight's gradient arrives after its layer's backward sleep: the
  // k-th gradient to arrive finds at least k sleeps ended (the layers'
  // backwards run one after another on one thread).
  std::vector<int64_t> arrivalsNs;
  for (auto& [name, m] : emulated->namedModules()) {
    if (m->typeName() != "Linear") continue;
    autograd::registerHook(m->param("weight"), [&arrivalsNs](const Tensor&) {
      arrivalsNs.push_back(monotonicNowNs());
      return Tensor();
    });
  }
  trace::start();
  const std::vector<Tensor> got = gradients(*emulated, tr);
  trace::stop();
  const EmulatedSpans spans = emulatedSpans(trace::snapshot());
  trace::clear();

  ASSERT_EQ(spans.forwardDurNs.size(), static_cast<size_t>(layers));
  ASSERT_EQ(spans.backwardDurNs.size(), static_cast<size_t>(layers));
  // A sleep lasts at least what it was asked for (it may last longer).
  for (int64_t d : spans.forwardDurNs) EXPECT_GE(d, 2'000'000);
  for (int64_t d : spans.backwardDurNs) EXPECT_GE(d, 3'000'000);
  ASSERT_EQ(arrivalsNs.size(), static_cast<size_t>(layers));
  std::sort(arrivalsNs.begin(), arrivalsNs.end());
  for (size_t k = 0; k < arrivalsNs.size(); ++k) {
    const auto ended = std::count_if(spans.backwardEndNs.begin(), spans.backwardEndNs.end(),
                                     [&](int64_t end) { return end <= arrivalsNs[k]; });
    EXPECT_GE(ended, static_cast<long>(k + 1)) << "gradient " << k;
  }

  const std::vector<Tensor> want = gradients(*plain, tr);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].defined()) << "parameter " << i;
    EXPECT_EQ(got[i].contiguous().toVector<float>(), want[i].contiguous().toVector<float>())
        << "parameter " << i;
  }
}

TEST(LayerCompute, ForwardOnlyLeavesTheGraphAlone) {
  const TrainingWorkload tr = smallMlp();
  auto model = buildScenarioModel(tr);
  emulateLayerCompute(*model, LayerCompute{1.0, 0.0});
  trace::start();
  gradients(*model, tr);
  trace::stop();
  const EmulatedSpans spans = emulatedSpans(trace::snapshot());
  trace::clear();
  EXPECT_EQ(spans.forwardDurNs.size(), static_cast<size_t>(linearLayers(*model)));
  EXPECT_TRUE(spans.backwardDurNs.empty());
}

}  // namespace
}  // namespace distlab::emulator
