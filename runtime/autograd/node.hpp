#pragma once
// Graph nodes of the autograd engine (PyTorch: torch::autograd::Node).
//
// A differentiable op (namespace distlab::ops) computes its result with the raw
// tensor kernels and, when grad mode is on and an input requires grad, records
// a Node: the node's inputs are the gradients of the op's outputs, its outputs
// the gradients of the op's inputs, sent along `nextEdges()` (one edge per op
// input; an invalid edge where that input needs no gradient). Leaves that
// require grad end in an AccumulateGrad node, which adds into `.grad`.
//
// Ownership: a tensor's AutogradMeta holds its grad_fn strongly; nodes hold
// their next nodes strongly (the graph lives as long as its outputs); a leaf
// holds its AccumulateGrad only weakly (it is created lazily and lives as long
// as some graph or a caller such as the DDP Reducer holds it).
// Thread-safety: a graph is built and run on one thread; nodes are not locked.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/trace.hpp"
#include "runtime/tensor/autograd_meta.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::autograd {

using TensorList = std::vector<Tensor>;
class Node;

// Where a gradient goes: input `inputNr` of `function` (null: nowhere).
struct Edge {
  std::shared_ptr<Node> function;
  uint32_t inputNr = 0;
  bool isValid() const { return function != nullptr; }
};

// A hook on the gradient flowing into a tensor: returns a replacement gradient,
// or an undefined Tensor to keep the gradient as it is (PyTorch: register_hook).
using GradHook = std::function<Tensor(const Tensor&)>;

class Node : public std::enable_shared_from_this<Node> {
 public:
  // Later nodes get larger sequence numbers; among ready nodes the engine runs
  // the largest first (reverse creation order, as PyTorch's CPU engine does).
  explicit Node(uint32_t numInputs);
  Node(uint32_t numInputs, uint64_t sequenceNr);
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Computes the gradients for nextEdges() from the gradients of this node's
  // inputs (`grads.size() == numInputs()`; an undefined entry means zero).
  // Returns one entry per next edge (undefined where there is no gradient).
  virtual TensorList apply(TensorList&& grads) = 0;
  virtual std::string name() const = 0;
  // Frees saved tensors after a backward without retain_graph.
  virtual void releaseVariables() {}

  uint32_t numInputs() const { return numInputs_; }
  uint64_t sequenceNr() const { return sequenceNr_; }
  const std::vector<Edge>& nextEdges() const { return nextEdges_; }
  void addNextEdge(Edge edge) { nextEdges_.push_back(std::move(edge)); }

  // Hooks on input `inputNr` (the gradient of a non-leaf tensor produced by
  // this node); run by the engine before apply(), in registration order.
  // Returns an id for removePreHook().
  uint64_t addPreHook(uint32_t inputNr, GradHook hook);
  bool removePreHook(uint64_t id);
  // Applies the pre-hooks to `grads` in place (engine use).
  void runPreHooks(TensorList& grads) const;

 private:
  uint32_t numInputs_;
  uint64_t sequenceNr_;
  std::vector<Edge> nextEdges_;
  std::map<uint64_t, std::pair<uint32_t, GradHook>> preHooks_;
};

// Ids for hooks and handles; unique per process.
uint64_t nextHookId();

// The sink of a leaf that requires grad. Contract (PyTorch semantics, relied on
// by DDP's gradient_as_bucket_view):
//   1. The leaf's gradient hooks (AutogradMeta::gradHooks) run first and may
//      replace the incoming gradient.
//   2. When `.grad` is undefined it becomes the incoming gradient itself when no
//      other tensor shares that gradient's storage and its layout matches the
//      leaf (contiguous, same sizes and strides); otherwise a contiguous copy.
//   3. When `.grad` is defined it is updated IN PLACE (`grad.add_(incoming)`),
//      so a `.grad` that is a view into a bucket keeps pointing at the bucket.
//   4. Then the post-accumulate-grad hooks run (in registration order) with the
//      leaf itself; `leaf.grad()` holds the accumulated gradient.
// Everything happens with grad mode off, on the thread running backward.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(Tensor variable);
  TensorList apply(TensorList&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

// The generic node of distlab::ops: a backward closure plus its name.
// `needsGrad[i]` says whether next edge i wants a gradient (closures may skip
// work and return an undefined Tensor there).
using BackwardFn =
    std::function<TensorList(const TensorList& grads, const std::vector<bool>& needsGrad)>;

class FunctionNode : public Node {
 public:
  // `savesTensors`: the closure holds forward tensors; after a backward without
  // retain_graph they are freed and a second backward through this node throws.
  FunctionNode(std::string name, uint32_t numInputs, BackwardFn fn, bool savesTensors);
  TensorList apply(TensorList&& grads) override;
  std::string name() const override { return name_; }
  void releaseVariables() override;
  // The module whose forward recorded this node (trace::currentScope() at
  // construction, only while tracing is on); null otherwise.
  const trace::Label& traceScope() const { return traceScope_; }

 private:
  std::string name_;
  trace::Label traceScope_;
  BackwardFn fn_;
  bool savesTensors_;
  bool released_ = false;
};

// ---- recording helpers (used by distlab::ops) --------------------------------

// The edge a gradient of `t` flows along: (grad_fn, output_nr) for non-leaves,
// (AccumulateGrad, 0) for leaves requiring grad, invalid otherwise.
Edge gradientEdge(const Tensor& t);
// The leaf's AccumulateGrad, created on first use and cached (weakly) in its
// AutogradMeta. Throws ValueError when `leaf` is not a leaf requiring grad.
std::shared_ptr<Node> gradAccumulator(const Tensor& leaf);
// True when grad mode is on and some defined input requires grad.
bool shouldRecord(const TensorList& inputs);
// Records `name` as the producer of `outputs` with edges to `inputs`. Outputs
// that already carry autograd metadata (a kernel returned an input handle) are
// replaced by a fresh handle first. No-op when shouldRecord(inputs) is false.
void recordFunction(const std::string& name,
                    const TensorList& inputs,
                    TensorList& outputs,
                    BackwardFn fn,
                    bool savesTensors = true);
// Single-output convenience: returns the (possibly re-handled) output.
Tensor recordFunction(const std::string& name,
                      const TensorList& inputs,
                      Tensor output,
                      BackwardFn fn,
                      bool savesTensors = true);

}  // namespace distlab::autograd
