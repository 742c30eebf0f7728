#include "runtime/autograd/multi_grad_hook.hpp"

#include <memory>

#include "runtime/autograd/engine.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::autograd {
namespace {

// The per-backward state shared by the per-tensor hooks (Note [Multi-grad hooks]).
struct MultiGradState {
  MultiGradFn fn;
  MultiGradMode mode;
  TensorList grads;
  size_t seen = 0;
  bool armed = false;  // a reset callback is queued for the running backward
  bool fired = false;
  bool once = false;
  std::vector<RemovableHandle> handles;  // removed after the first firing when `once`

  void reset() {
    if (once && fired) {
      for (auto& h : handles) h.remove();
    }
    grads.assign(grads.size(), Tensor());
    seen = 0;
    armed = false;
    fired = false;
  }

  void fire() {
    fired = true;
    fn(grads);
  }

  // Tensor `i` got `grad` in the running backward.
  void onGrad(size_t i, const Tensor& grad, const std::shared_ptr<MultiGradState>& self) {
    if (!armed) {
      armed = true;
      std::weak_ptr<MultiGradState> weak = self;
      queueCallback([weak] {
        auto s = weak.lock();
        if (!s) return;
        if (!s->fired && s->mode == MultiGradMode::kAll && s->seen > 0) s->fire();
        s->reset();
      });
    }
    if (!grads[i].defined()) ++seen;
    grads[i] = grad;
    if (fired) return;
    if (mode == MultiGradMode::kAny || seen == grads.size()) fire();
  }
};

std::shared_ptr<MultiGradState> makeState(const TensorList& tensors, MultiGradFn fn,
                                          MultiGradMode mode, bool once) {
  DL_CHECK_T(ValueError, !tensors.empty(), "register_multi_grad_hook: the tensor list is empty");
  for (size_t i = 0; i < tensors.size(); ++i) {
    DL_CHECK_T(ValueError, tensors[i].defined() && tensors[i].requiresGrad(),
               "register_multi_grad_hook: tensor ", i, " does not require grad");
  }
  auto state = std::make_shared<MultiGradState>();
  state->fn = std::move(fn);
  state->mode = mode;
  state->once = once;
  state->grads.resize(tensors.size());
  return state;
}

// The state keeps the handles (weak references only) for `once`.
RemovableHandle combine(const std::shared_ptr<MultiGradState>& state,
                        std::vector<RemovableHandle> handles) {
  state->handles = handles;
  return RemovableHandle([handles]() mutable {
    for (auto& h : handles) h.remove();
  });
}

}  // namespace

RemovableHandle registerMultiGradHook(const TensorList& tensors, MultiGradFn fn,
                                      MultiGradMode mode, bool once) {
  auto state = makeState(tensors, std::move(fn), mode, once);
  std::vector<RemovableHandle> handles;
  for (size_t i = 0; i < tensors.size(); ++i) {
    handles.push_back(registerHook(tensors[i], [state, i](const Tensor& grad) {
      state->onGrad(i, grad, state);
      return Tensor();
    }));
  }
  return combine(state, std::move(handles));
}

RemovableHandle registerMultiPostAccumulateGradHook(const TensorList& leaves, MultiGradFn fn,
                                                    MultiGradMode mode, bool once) {
  auto state = makeState(leaves, std::move(fn), mode, once);
  std::vector<RemovableHandle> handles;
  for (size_t i = 0; i < leaves.size(); ++i) {
    handles.push_back(registerPostAccumulateGradHook(
        leaves[i], [state, i](Tensor& leaf) { state->onGrad(i, leaf.grad(), state); }));
  }
  return combine(state, std::move(handles));
}

}  // namespace distlab::autograd
