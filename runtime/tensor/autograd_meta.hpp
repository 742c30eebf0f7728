#pragma once
// The autograd slot of a tensor (PyTorch: AutogradMeta). Declared in the
// tensor layer because the tensor owns it; only runtime/autograd interprets
// grad_fn and the hooks (Node is opaque here).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace autograd {
class Node;  // runtime/autograd/node.hpp
}  // namespace autograd

struct AutogradMeta {
  bool requiresGrad = false;
  Tensor grad;                                   // .grad (accumulated), may be undefined
  std::shared_ptr<autograd::Node> gradFn;        // producer; null for leaves
  uint32_t outputNr = 0;                         // which output of gradFn this is
  std::weak_ptr<autograd::Node> gradAccumulator; // a leaf's AccumulateGrad (created lazily)
  bool retainsGrad = false;                      // non-leaf .grad kept (retain_grad())
  std::string name;                              // optional, for messages
  // Hooks on the gradient flowing into this tensor (register_hook): each may
  // return a replacement (defined) or leave it (undefined). Keyed by handle id.
  std::map<uint64_t, std::function<Tensor(const Tensor&)>> gradHooks;
  // Post-accumulate-grad hooks (leaves only): run after .grad was updated.
  std::map<uint64_t, std::function<void(Tensor&)>> postAccumulateGradHooks;
};

}  // namespace distlab
