#include "emulator/workloads/training_model.hpp"

#include <fmt/format.h>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/nn/layers.hpp"
#include "runtime/nn/loss.hpp"
#include "runtime/nn/models/gpt.hpp"
#include "runtime/nn/models/mlp.hpp"
#include "runtime/nn/models/two_layer_net.hpp"
#include "runtime/tensor/dispatch.hpp"

namespace distlab::emulator {

namespace {

class ScenarioNet : public nn::Module {
 public:
  // mlp / residual_mlp: body + aux = Linear(out, out) on the body's output.
  ScenarioNet(std::shared_ptr<nn::Module> body, int64_t out, Generator& gen)
      : Module("ScenarioNet") {
    body_ = registerModule("body", std::move(body));
    aux_ = registerModule("aux", std::make_shared<nn::Linear>(out, out, gen));
  }
  // two_layer: TwoLinLayerNet's a is the main path, b the auxiliary one.
  explicit ScenarioNet(std::shared_ptr<nn::TwoLinLayerNet> net) : Module("ScenarioNet") {
    body_ = registerModule("body", net);
    twoLayer_ = true;
  }
  void setAuxUsed(bool used) { auxUsed_ = used; }
  nn::TensorList forwardAll(const nn::TensorList& inputs) override {
    if (twoLayer_) {
      const Tensor& x = inputs.at(0);
      Tensor a = body_->child("a")->forward(x);
      if (!auxUsed_) return {a};
      return {a, body_->child("b")->forward(x)};
    }
    Tensor h = body_->call(inputs).at(0);
    if (!auxUsed_) return {h};
    return {h, aux_->forward(h)};
  }

 private:
  std::shared_ptr<nn::Module> body_;
  std::shared_ptr<nn::Linear> aux_;
  bool twoLayer_ = false;
  bool auxUsed_ = true;
};

}  // namespace

int64_t modelInputDim(const TrainingWorkload& tr) {
  return tr.model == "two_layer" ? 10 : tr.sizes.front();
}
int64_t modelOutputDim(const TrainingWorkload& tr) {
  return tr.model == "two_layer" ? 10 : tr.sizes.back();
}

namespace {

std::shared_ptr<nn::Module> buildModel(const TrainingWorkload& tr) {
  Generator gen(tr.seed);
  if (tr.model == "two_layer") {
    return std::make_shared<ScenarioNet>(std::make_shared<nn::TwoLinLayerNet>(gen));
  }
  if (tr.model == "gpt") {
    nn::GptOptions o;
    o.vocabSize = tr.gpt.vocab;
    o.blockSize = tr.gpt.block;
    o.nEmbd = tr.gpt.embd;
    o.nHead = tr.gpt.heads;
    o.nLayer = tr.gpt.layers;
    o.tiedHead = tr.gpt.tied;
    return std::make_shared<nn::Gpt>(o, gen);
  }
  std::shared_ptr<nn::Module> body;
  const auto& s = tr.sizes;
  if (tr.model == "mlp") {
    nn::MlpOptions o;
    o.inputDim = s.front();
    o.hidden = s.size() > 2 ? s[1] : s.front();
    o.depth = std::max<int64_t>(1, static_cast<int64_t>(s.size()) - 2);
    o.outputDim = s.back();
    body = std::make_shared<nn::Mlp>(o, gen);
  } else {  // residual_mlp: [in, dim, hidden, out]
    nn::ResidualMlpOptions o;
    o.inputDim = s.front();
    o.dim = s.size() > 2 ? s[1] : s.front();
    o.hidden = s.size() > 3 ? s[2] : o.dim * 2;
    o.depth = 2;
    o.outputDim = s.back();
    body = std::make_shared<nn::ResidualMlp>(o, gen);
  }
  return std::make_shared<ScenarioNet>(body, s.back(), gen);
}

}  // namespace

std::shared_ptr<nn::Module> buildScenarioModel(const TrainingWorkload& tr, Device device) {
  if (device.isCpu()) return buildModel(tr);
  DefaultDeviceGuard onDevice(device);  // the parameters' factories run there
  return buildModel(tr);
}

void setAuxUsed(nn::Module& model, bool used) {
  if (auto* net = dynamic_cast<ScenarioNet*>(&model)) net->setAuxUsed(used);
}

Tensor scenarioLoss(const nn::TensorList& outputs, const Tensor& y, bool useAux) {
  if (y.dtype() == DType::kInt64) {  // gpt: logits (B, T, vocab), targets (B, T)
    const Tensor& logits = outputs.at(0);
    const int64_t vocab = logits.size(-1);
    return nn::crossEntropyLoss(ops::reshape(logits, {logits.numel() / vocab, vocab}),
                                y.reshape({y.numel()}));
  }
  Tensor loss = nn::mseLoss(outputs.at(0), y);
  if (useAux && outputs.size() > 1) {
    const Tensor& aux = outputs[1];
    Tensor term = aux.numel() == y.numel() ? nn::mseLoss(aux, y)
                                           : ops::mean(ops::mul(aux, aux));
    loss = ops::add(loss, ops::mul(term, Scalar(0.1)));
  }
  return loss;
}

std::string tensorsChecksum(const std::vector<Tensor>& tensors) {
  uint64_t h = 1469598103934665603ULL;
  for (const auto& t : tensors) {
    Tensor c = t.to(Device::cpu()).contiguous();
    const auto* p = static_cast<const uint8_t*>(c.rawData());
    for (size_t i = 0; i < c.nbytes(); ++i) {
      h ^= p[i];
      h *= 1099511628211ULL;
    }
  }
  return fmt::format("{:016x}", h);
}

}  // namespace distlab::emulator
