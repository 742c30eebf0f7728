#include "runtime/optim/adam.hpp"

#include <cmath>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::optim {
namespace {

void validateAdam(const Options& o) {
  DL_CHECK_T(ValueError, o.at("lr") >= 0.0, "Invalid learning rate: ", o.at("lr"));
  DL_CHECK_T(ValueError, o.at("eps") >= 0.0, "Invalid epsilon value: ", o.at("eps"));
  DL_CHECK_T(ValueError, o.at("beta1") >= 0.0 && o.at("beta1") < 1.0,
             "Invalid beta parameter at index 0: ", o.at("beta1"));
  DL_CHECK_T(ValueError, o.at("beta2") >= 0.0 && o.at("beta2") < 1.0,
             "Invalid beta parameter at index 1: ", o.at("beta2"));
  DL_CHECK_T(ValueError, o.at("weight_decay") >= 0.0,
             "Invalid weight_decay value: ", o.at("weight_decay"));
}

Tensor& buffer(ParamState& st, const char* name, const Tensor& like) {
  auto it = st.buffers.find(name);
  if (it == st.buffers.end()) {
    it = st.buffers.emplace(name, zeros(like.sizes(), TensorOptions{like.dtype(), like.device()}))
             .first;
  }
  return it->second;
}

}  // namespace

Options AdamOptions::toMap() const {
  return {{"lr", lr},
          {"beta1", beta1},
          {"beta2", beta2},
          {"eps", eps},
          {"weight_decay", weightDecay},
          {"amsgrad", amsgrad ? 1.0 : 0.0},
          {"maximize", maximize ? 1.0 : 0.0}};
}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam("Adam", {ParamGroup{std::move(params), {}}}, options, false) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : Adam("Adam", std::move(groups), defaults, false) {}

Adam::Adam(std::string name,
           std::vector<ParamGroup> groups,
           const AdamOptions& defaults,
           bool decoupled)
    : Optimizer(std::move(name), defaults.toMap(), std::move(groups)), decoupled_(decoupled) {
  for (const auto& g : paramGroups()) validateAdam(g.options);
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : Adam("AdamW", {ParamGroup{std::move(params), {}}}, options, true) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
    : Adam("AdamW", std::move(groups), defaults, true) {}

void Adam::step() {
  trace::Span span(trace::Category::kCompute, "optimizer step");
  autograd::NoGradGuard noGrad;
  for (auto& group : paramGroups()) {
    const double lr = option(group, "lr");
    const double beta1 = option(group, "beta1");
    const double beta2 = option(group, "beta2");
    const double eps = option(group, "eps");
    const double wd = option(group, "weight_decay");
    const bool amsgrad = option(group, "amsgrad") != 0.0;
    const bool maximize = option(group, "maximize") != 0.0;
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      Tensor g = maximize ? p.grad().neg() : p.grad();
      ParamState& st = state(p);
      const auto step = static_cast<double>(++st.step);
      if (wd != 0.0) {
        if (decoupled_) {
          p.mul_(1.0 - lr * wd);
        } else {
          g = g.add(p, wd);
        }
      }
      Tensor& m = buffer(st, "exp_avg", p);
      Tensor& v = buffer(st, "exp_avg_sq", p);
      m.lerp_(g, 1.0 - beta1);
      v.mul_(beta2).addcmul_(g, g, 1.0 - beta2);
      const double bc1 = 1.0 - std::pow(beta1, step);
      const double bc2Sqrt = std::sqrt(1.0 - std::pow(beta2, step));
      Tensor second = v;
      if (amsgrad) {
        Tensor& vmax = buffer(st, "max_exp_avg_sq", p);
        vmax.maximum_(v);
        second = vmax;
      }
      Tensor denom = second.sqrt().div_(bc2Sqrt).add_(eps);
      p.addcdiv_(m, denom, -lr / bc1);
    }
  }
}

}  // namespace distlab::optim
