#include "emulator/workloads/reference_check.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "emulator/workloads/scenario_data.hpp"
#include "emulator/workloads/training_model.hpp"
#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/grad_mode.hpp"

namespace distlab::emulator {

namespace {

constexpr double kFloat32UnitRoundoff = 0x1p-24;
constexpr double kFloat32HalfSubnormal = 0x1p-150;

// Unit roundoff and half the smallest subnormal spacing of the dtype the
// engine communicates gradients in (see the Note in the header).
std::pair<double, double> commRounding(const TrainingWorkload& tr) {
  if (tr.commHook == "fp16_compress") return {0x1p-11, 0x1p-25};
  if (tr.commHook == "bf16_compress") return {0x1p-8, 0x1p-134};
  return {kFloat32UnitRoundoff, kFloat32HalfSubnormal};
}

std::vector<double> valuesOf(const Tensor& t, int64_t numel) {
  if (!t.defined()) return std::vector<double>(static_cast<size_t>(numel), 0.0);
  return t.to(DType::kFloat64).contiguous().toVector<double>();
}

bool bitwiseEqual(const Tensor& a, const Tensor& b) {
  Tensor ca = a.to(Device::cpu()).contiguous(), cb = b.to(Device::cpu()).contiguous();
  return ca.numel() == cb.numel() &&
         std::memcmp(ca.rawData(), cb.rawData(), static_cast<size_t>(ca.nbytes())) == 0;
}

}  // namespace

ReferenceChecker::ReferenceChecker(const TrainingWorkload& training, int worldSize, int ranks,
                                   Device device)
    : training_(training), worldSize_(worldSize), ranks_(ranks), device_(device),
      model_(buildScenarioModel(training, device)) {
  for (const auto& [name, p] : model_->namedParameters()) names_.push_back(name);
  accumulated_.resize(static_cast<size_t>(ranks));
  std::tie(commUnitRoundoff_, commHalfSubnormal_) = commRounding(training);
}

void ReferenceChecker::checkParametersUnchanged(int step, const std::vector<Tensor>& engineParams) {
  if (afterStep_.empty() || parameterChanged_) return;
  for (size_t i = 0; i < engineParams.size(); ++i) {
    if (bitwiseEqual(engineParams[i], afterStep_[i])) continue;
    parameterChanged_ = true;
    verdict_.withinBound = false;
    verdict_.detail = fmt::format("parameter {} changed between the optimizer step and step {} "
                                  "(the engine must not modify parameters)", names_[i], step);
    return;
  }
}

void ReferenceChecker::afterBackward(int step, bool synced,
                                     const std::vector<Tensor>& engineParams) {
  checkParametersUnchanged(step, engineParams);
  auto refParams = model_->parameters();
  {
    autograd::NoGradGuard noGrad;
    for (size_t i = 0; i < refParams.size(); ++i) refParams[i].copy_(engineParams[i]);
  }
  const auto& tr = training_;
  for (int q = 0; q < ranks_; ++q) {
    model_->zeroGrad();
    auto [x, y] = scenarioBatch(tr, worldSize_, q, step, device_);
    autograd::backward(scenarioLoss(model_->call({x}), y, true));
    auto& acc = accumulated_[static_cast<size_t>(q)];
    for (size_t i = 0; i < refParams.size(); ++i) {
      const Tensor& g = refParams[i].grad();
      Tensor local = g.defined() ? g : zerosLike(refParams[i]);
      // The same float32 in-place addition AccumulateGrad does on rank q.
      if (acc.size() <= i) acc.push_back(local.clone());
      else acc[i].add_(local);
    }
  }
  if (synced) {
    compareSynced(step, engineParams);
    for (auto& acc : accumulated_) acc.clear();
  }
}

void ReferenceChecker::compareSynced(int step, const std::vector<Tensor>& engineParams) {
  if (parameterChanged_) return;  // the first failure is the one to report
  const double n = ranks_;
  const double relative = 1.01 * (n + 1) * (commUnitRoundoff_ + kFloat32UnitRoundoff);
  const double absolute = (n + 1) * (commHalfSubnormal_ + kFloat32HalfSubnormal);
  verdict_.checked = true;
  for (size_t i = 0; i < engineParams.size(); ++i) {
    const int64_t numel = engineParams[i].numel();
    std::vector<double> sum(static_cast<size_t>(numel), 0.0), magnitude(sum);
    for (int q = 0; q < ranks_; ++q) {
      std::vector<double> acc = valuesOf(accumulated_[static_cast<size_t>(q)][i], numel);
      for (size_t k = 0; k < acc.size(); ++k) {
        sum[k] += acc[k] / n;
        magnitude[k] += std::fabs(acc[k]) / n;
      }
    }
    std::vector<double> engine = valuesOf(engineParams[i].grad(), numel);
    for (size_t k = 0; k < engine.size(); ++k) {
      const double deviation = std::fabs(engine[k] - sum[k]);
      const double bound = relative * magnitude[k] + absolute;
      const double ratio = std::isfinite(deviation) ? deviation / bound
                                                    : std::numeric_limits<double>::max();
      if (!(ratio > verdict_.worstRatio)) continue;
      verdict_.worstRatio = ratio;
      verdict_.withinBound = verdict_.withinBound && ratio <= 1.0;
      verdict_.detail = fmt::format("step {}, {}[{}]: engine gradient {:.9g}, reference {:.9g}, "
                                    "rounding bound {:.3g}", step, names_[i], k, engine[k],
                                    sum[k], bound);
    }
  }
}

void ReferenceChecker::afterOptimizerStep(const std::vector<Tensor>& engineParams) {
  afterStep_.clear();
  for (const auto& p : engineParams) afterStep_.push_back(p.clone());
}

}  // namespace distlab::emulator
