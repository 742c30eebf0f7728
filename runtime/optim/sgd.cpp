#include "runtime/optim/sgd.hpp"

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::optim {
namespace {

void validateSgd(const Options& o) {
  DL_CHECK_T(ValueError, o.at("lr") >= 0.0, "Invalid learning rate: ", o.at("lr"));
  DL_CHECK_T(ValueError, o.at("momentum") >= 0.0, "Invalid momentum value: ", o.at("momentum"));
  DL_CHECK_T(ValueError, o.at("weight_decay") >= 0.0,
             "Invalid weight_decay value: ", o.at("weight_decay"));
  DL_CHECK_T(ValueError,
             o.at("nesterov") == 0.0 || (o.at("momentum") > 0.0 && o.at("dampening") == 0.0),
             "Nesterov momentum requires a momentum and zero dampening");
}

std::vector<ParamGroup> single(std::vector<Tensor> params) {
  return {ParamGroup{std::move(params), {}}};
}

}  // namespace

Options SgdOptions::toMap() const {
  return {{"lr", lr},
          {"momentum", momentum},
          {"dampening", dampening},
          {"weight_decay", weightDecay},
          {"nesterov", nesterov ? 1.0 : 0.0},
          {"maximize", maximize ? 1.0 : 0.0}};
}

SGD::SGD(std::vector<Tensor> params, const SgdOptions& options)
    : SGD(single(std::move(params)), options) {}

SGD::SGD(std::vector<ParamGroup> groups, const SgdOptions& defaults)
    : Optimizer("SGD", defaults.toMap(), std::move(groups)) {
  for (const auto& g : paramGroups()) validateSgd(g.options);
}

void SGD::step() {
  trace::Span span(trace::Category::kCompute, "optimizer step");
  autograd::NoGradGuard noGrad;
  for (auto& group : paramGroups()) {
    const double lr = option(group, "lr");
    const double momentum = option(group, "momentum");
    const double dampening = option(group, "dampening");
    const double wd = option(group, "weight_decay");
    const bool nesterov = option(group, "nesterov") != 0.0;
    const bool maximize = option(group, "maximize") != 0.0;
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      Tensor g = maximize ? p.grad().neg() : p.grad();
      if (wd != 0.0) g = g.add(p, wd);
      if (momentum != 0.0) {
        ParamState& st = state(p);
        auto it = st.buffers.find("momentum_buffer");
        if (it == st.buffers.end()) {
          it = st.buffers.emplace("momentum_buffer", g.clone()).first;
        } else {
          it->second.mul_(momentum).add_(g, 1.0 - dampening);
        }
        g = nesterov ? g.add(it->second, momentum) : it->second;
      }
      ++state(p).step;
      p.add_(g, -lr);
    }
  }
}

}  // namespace distlab::optim
