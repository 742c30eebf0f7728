// Module backward hooks (module.hpp): forward hooks that register multi-grad
// hooks on the call's outputs and inputs.
#include <memory>

#include "runtime/autograd/multi_grad_hook.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::nn {
namespace {

// The tensors of `list` that require grad, and their positions.
struct Tracked {
  TensorList tensors;
  std::vector<size_t> positions;
};

Tracked requiringGrad(const TensorList& list) {
  Tracked t;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].defined() && list[i].requiresGrad()) {
      t.tensors.push_back(list[i]);
      t.positions.push_back(i);
    }
  }
  return t;
}

// Spreads the tracked tensors' grads back over `size` positions.
TensorList spread(const Tracked& t, const TensorList& grads, size_t size) {
  TensorList out(size);
  for (size_t k = 0; k < grads.size(); ++k) out[t.positions[k]] = grads[k];
  return out;
}

}  // namespace

HookHandle Module::registerFullBackwardPreHook(BackwardPreHook hook) {
  auto shared = std::make_shared<BackwardPreHook>(std::move(hook));
  return registerForwardHook([shared](Module& m, const TensorList&, const TensorList& outputs) {
    Tracked t = requiringGrad(outputs);
    if (t.tensors.empty()) return std::optional<TensorList>();
    const size_t n = outputs.size();
    autograd::registerMultiGradHook(t.tensors, [shared, &m, t, n](const TensorList& grads) {
      (*shared)(m, spread(t, grads, n));
    }, autograd::MultiGradMode::kAll, /*once=*/true);
    return std::optional<TensorList>();
  });
}

HookHandle Module::registerFullBackwardHook(BackwardHook hook) {
  auto shared = std::make_shared<BackwardHook>(std::move(hook));
  return registerForwardHook([shared](Module& m, const TensorList& inputs,
                                      const TensorList& outputs) {
    Tracked in = requiringGrad(inputs);
    Tracked out = requiringGrad(outputs);
    if (in.tensors.empty() || out.tensors.empty()) return std::optional<TensorList>();
    auto gradOutputs = std::make_shared<TensorList>(outputs.size());
    const size_t nIn = inputs.size();
    const size_t nOut = outputs.size();
    autograd::registerMultiGradHook(out.tensors, [gradOutputs, out, nOut](const TensorList& g) {
      *gradOutputs = spread(out, g, nOut);
    }, autograd::MultiGradMode::kAll, /*once=*/true);
    autograd::registerMultiGradHook(in.tensors,
                                    [shared, &m, in, nIn, gradOutputs](const TensorList& g) {
                                      (*shared)(m, spread(in, g, nIn), *gradOutputs);
                                    }, autograd::MultiGradMode::kAll, /*once=*/true);
    return std::optional<TensorList>();
  });
}

}  // namespace distlab::nn
