#include "runtime/autograd/hooks.hpp"

#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::autograd {

RemovableHandle::RemovableHandle(std::function<void()> remover)
    : state_(std::make_shared<std::function<void()>>(std::move(remover))) {}

void RemovableHandle::remove() {
  if (!state_ || !*state_) return;
  auto remover = std::move(*state_);
  *state_ = nullptr;
  remover();
}

RemovableHandle registerHook(const Tensor& t, GradHook hook) {
  DL_CHECK_T(ValueError, t.defined() && t.requiresGrad(),
             "cannot register a hook on a tensor that doesn't require gradient");
  AutogradMeta* meta = t.autogradMeta();
  if (meta->gradFn) {
    std::weak_ptr<Node> node = meta->gradFn;
    const uint64_t id = meta->gradFn->addPreHook(meta->outputNr, std::move(hook));
    return RemovableHandle([node, id] {
      if (auto n = node.lock()) n->removePreHook(id);
    });
  }
  const uint64_t id = nextHookId();
  meta->gradHooks.emplace(id, std::move(hook));
  std::weak_ptr<AutogradMeta> weak = t.impl()->autograd;
  return RemovableHandle([weak, id] {
    if (auto m = weak.lock()) m->gradHooks.erase(id);
  });
}

RemovableHandle registerPostAccumulateGradHook(const Tensor& leaf,
                                               std::function<void(Tensor&)> hook) {
  DL_CHECK_T(ValueError, leaf.defined() && leaf.requiresGrad(),
             "cannot register a hook on a tensor that doesn't require gradient");
  DL_CHECK_T(ValueError, leaf.isLeaf(),
             "post accumulate grad hooks cannot be registered on non-leaf tensors");
  const uint64_t id = nextHookId();
  leaf.autogradMeta()->postAccumulateGradHooks.emplace(id, std::move(hook));
  std::weak_ptr<AutogradMeta> weak = leaf.impl()->autograd;
  return RemovableHandle([weak, id] {
    if (auto m = weak.lock()) m->postAccumulateGradHooks.erase(id);
  });
}

void retainGrad(const Tensor& t) {
  DL_CHECK_T(ValueError, t.defined() && t.requiresGrad(),
             "can't retain_grad on Tensor that has requires_grad=False");
  AutogradMeta* meta = t.autogradMeta();
  if (!meta->gradFn || meta->retainsGrad) return;
  meta->retainsGrad = true;
  std::weak_ptr<AutogradMeta> weak = t.impl()->autograd;
  meta->gradFn->addPreHook(meta->outputNr, [weak](const Tensor& grad) {
    if (auto m = weak.lock()) {
      m->grad = m->grad.defined() ? m->grad.add(grad) : grad.clone();
    }
    return Tensor();
  });
}

}  // namespace distlab::autograd
