#pragma once
// The backward engine (PyTorch: torch::autograd::Engine), single-threaded.
//
// backward() runs on the calling thread, with grad mode off, and returns when
// every reachable node has run and the queued callbacks have finished.
// Order: a node runs once all gradients flowing into it have arrived
// (dependency counts over the graph reachable from the roots); among ready
// nodes the most recently created runs first, and AccumulateGrad nodes run as
// soon as they are ready (Note [Engine order] in engine.cpp). So a parameter's
// post-accumulate-grad hook fires as early as its gradient is complete, which
// is what lets DDP launch buckets while backward still runs.
//
// Errors: an exception from a node, hook or callback propagates out of
// backward(); the remaining nodes do not run and queued callbacks are dropped.
#include <functional>

#include "runtime/autograd/node.hpp"

namespace distlab::autograd {

// Computes the gradients of `tensors` w.r.t. the graph leaves, accumulating
// them into the leaves' `.grad` (PyTorch: torch.autograd.backward).
// `grads`: one per tensor (empty list: all implicit); an undefined entry is
// implicitly ones and is only allowed for one-element tensors
// ("grad can be implicitly created only for scalar outputs").
// `retainGraph` false frees the saved tensors of the nodes that ran; a later
// backward through them throws "Trying to backward through the graph a second
// time ...".
void backward(const TensorList& tensors, const TensorList& grads = {}, bool retainGraph = false);
// `loss.backward(grad, retain_graph)`.
void backward(const Tensor& tensor, const Tensor& grad = {}, bool retainGraph = false);

// Queues `callback` to run on this thread after the current backward's last
// node (PyTorch: Variable._execution_engine.queue_callback). Callbacks run in
// the order queued; a callback may queue further callbacks. Throws Error when
// called outside a backward on this thread ("Final callbacks can only be
// installed during backward pass.").
void queueCallback(std::function<void()> callback);
// True while a backward is running on this thread (in a node, hook or callback).
bool isBackwardRunning();

// The leaves requiring grad whose AccumulateGrad is reachable from the outputs'
// grad_fns (an output that is itself such a leaf counts), in discovery order,
// each once (handles share the leaf's impl: `leaf.isSame(param)`). DDP's
// find_unused_parameters marks every parameter not in this list as unused.
TensorList reachableLeaves(const TensorList& outputs);

}  // namespace distlab::autograd
