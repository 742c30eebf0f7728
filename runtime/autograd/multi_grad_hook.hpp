#pragma once
// Hooks over a set of tensors (PyTorch: torch.autograd.graph.register_multi_grad_hook).
//
// Note [Multi-grad hooks]
// A multi-grad hook watches the gradients of several tensors during one
// backward. Mode kAll calls `fn` once, with one entry per tensor (undefined
// where that tensor got no gradient in this backward), as soon as every tensor
// got its gradient; when some tensors get none in this backward, it is called
// at the end of that backward with the ones that did (PyTorch decides
// "participating" up front from the graph; distlab learns it at the end, so
// only the timing differs for a partially used set). kAny calls `fn` once per
// backward, on the first gradient among the tensors (with that one defined).
// The hook state resets after each backward (an engine callback queued at the
// first gradient), so the hook fires again in the next backward.
//
// registerMultiGradHook sees the gradient flowing into each tensor (before a
// leaf accumulates it: Tensor.register_hook semantics).
// registerMultiPostAccumulateGradHook watches leaves and fires after their
// `.grad` was accumulated (what FSDP needs to reduce-scatter accumulated
// gradients); `fn` receives the leaves' `.grad` values.
//
// `once`: the registrations are removed at the end of the first backward in
// which the hook fired (per-call hooks, such as module backward hooks, use it so
// leaves do not collect a hook per forward).
// All run on the backward thread with grad mode off. The returned handle
// removes every per-tensor registration. Throws ValueError for an empty set or a
// tensor that does not require grad.
#include <functional>
#include <vector>

#include "runtime/autograd/hooks.hpp"

namespace distlab::autograd {

enum class MultiGradMode { kAll, kAny };
using MultiGradFn = std::function<void(const TensorList& grads)>;

RemovableHandle registerMultiGradHook(const TensorList& tensors, MultiGradFn fn,
                                      MultiGradMode mode = MultiGradMode::kAll, bool once = false);
RemovableHandle registerMultiPostAccumulateGradHook(const TensorList& leaves, MultiGradFn fn,
                                                    MultiGradMode mode = MultiGradMode::kAll,
                                                    bool once = false);

}  // namespace distlab::autograd
