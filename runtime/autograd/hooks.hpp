#pragma once
// Hooks on tensors' gradients and on leaves' gradient accumulation.
//
// Hooks run on the thread running backward, with grad mode off, in
// registration order. A hook must not call backward() itself.
#include <functional>
#include <memory>

#include "runtime/autograd/node.hpp"

namespace distlab::autograd {

// Removes the hook it was returned for (PyTorch: RemovableHandle). Copies share
// one registration; remove() is idempotent and safe after the tensor died.
class RemovableHandle {
 public:
  RemovableHandle() = default;
  explicit RemovableHandle(std::function<void()> remover);
  void remove();
  bool active() const { return state_ && *state_; }

 private:
  std::shared_ptr<std::function<void()>> state_;
};
using HookHandle = RemovableHandle;

// Hook on the gradient flowing into `t` (PyTorch: Tensor.register_hook). For a
// leaf it runs inside AccumulateGrad before the gradient is accumulated; for a
// non-leaf before its grad_fn runs. Returning a defined tensor replaces the
// gradient. Throws ValueError when `t` does not require grad.
RemovableHandle registerHook(const Tensor& t, GradHook hook);

// Hook run after a leaf's `.grad` was accumulated
// (PyTorch: Tensor.register_post_accumulate_grad_hook); it receives the leaf.
// Throws ValueError for non-leaves and tensors that do not require grad.
RemovableHandle registerPostAccumulateGradHook(const Tensor& leaf,
                                               std::function<void(Tensor&)> hook);

// Keeps the gradient of a non-leaf in its `.grad` (PyTorch: retain_grad()),
// accumulating across backward calls. No-op for leaves.
void retainGrad(const Tensor& t);

}  // namespace distlab::autograd
