// Module::toEmpty, resetParameters and initializeParameters.
//
// Note [Meta models]
// A model too large for one host is built on the meta device (under a
// DefaultDeviceGuard): every parameter has its shape and dtype, no memory, and
// construction draws no random numbers. FSDP2 shards it, then each rank
// materialises its part: toEmpty(device) gives every tensor memory, and
// initializeParameters re-runs the layers' default initialisation. Layers
// draw in the order their constructors do and modules are visited in
// registration order, so a model materialised with a fresh generator of the
// construction seed equals one built directly on that device.
#include <unordered_map>
#include <unordered_set>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::nn {
namespace {

// Moves `t` to an empty tensor on `device`, reusing the replacement of an
// already-moved (tied) tensor.
Tensor emptyTwin(const Tensor& t, Device device,
                 std::unordered_map<const TensorImpl*, Tensor>& moved) {
  auto it = moved.find(t.impl());
  if (it != moved.end()) return it->second;
  Tensor fresh = t.toEmpty(device);
  if (t.requiresGrad()) fresh.setRequiresGrad(true);
  moved.emplace(t.impl(), fresh);
  return fresh;
}

}  // namespace

void Module::toEmpty(Device device) {
  std::unordered_map<const TensorImpl*, Tensor> moved;
  for (const auto& [prefix, m] : namedModules()) {
    (void)prefix;
    for (auto& [name, t] : m->params_) t = emptyTwin(t, device, moved);
    for (auto& [name, t] : m->buffers_) t = emptyTwin(t, device, moved);
  }
}

void Module::resetParameters(Generator&) {}

void Module::fillState(const std::string& name, const Tensor& value) {
  autograd::NoGradGuard noGrad;
  for (auto* list : {&params_, &buffers_}) {
    for (auto& [n, t] : *list) {
      if (n == name) {
        t.copy_(value);
        return;
      }
    }
  }
  throw ValueError(typeName_ + " has no parameter or buffer \"" + name + "\"");
}

void initializeParameters(Module& root, Generator& gen) {
  std::unordered_set<const TensorImpl*> done;
  for (const auto& [prefix, m] : root.namedModules()) {
    (void)prefix;
    // A tensor initialised by an earlier module (tied) keeps those values:
    // the later module still draws (as its constructor did), then they return.
    std::vector<std::pair<Tensor, Tensor>> keep;
    const NamedTensors own = m->namedParameters(false);
    NamedTensors state = own;
    for (auto& b : m->namedBuffers(false)) state.push_back(b);
    for (const auto& [name, t] : state) {
      if (!done.insert(t.impl()).second) keep.emplace_back(t, t.detach().clone());
    }
    m->resetParameters(gen);
    autograd::NoGradGuard noGrad;
    for (auto& [t, saved] : keep) Tensor(t).copy_(saved);
  }
}

}  // namespace distlab::nn
