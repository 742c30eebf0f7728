#include "runtime/autograd/engine.hpp"

#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/training_observer.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::autograd {
namespace {

struct GraphTask {
  std::vector<std::function<void()>> callbacks;
};
thread_local GraphTask* tCurrentTask = nullptr;

// Scopes the current graph task (restores the outer one: reentrant backward).
class TaskScope {
 public:
  explicit TaskScope(GraphTask* task) : previous_(tCurrentTask) { tCurrentTask = task; }
  ~TaskScope() { tCurrentTask = previous_; }
  TaskScope(const TaskScope&) = delete;
  TaskScope& operator=(const TaskScope&) = delete;

 private:
  GraphTask* previous_;
};

// Note [Backward spans per module]
// Tracing one span per autograd node would drown a step in tiny events; the
// engine instead merges consecutive nodes recorded under the same module
// (FunctionNode::traceScope) into one "backward <module>" compute span. Nodes
// without a scope (AccumulateGrad and the DDP hooks it runs, the graph root)
// extend the open span; the span closes before the queued callbacks run, so a
// callback that waits for communication (DDP's finalize) is not compute.
class ModuleSpans {
 public:
  void enter(const Node& node) {
    if (!trace::enabled()) return;
    const auto* fn = dynamic_cast<const FunctionNode*>(&node);
    const std::string* label = fn && fn->traceScope() ? fn->traceScope().get() : nullptr;
    if (open_ && (label == nullptr || label == label_)) return;
    close();
    open_ = true;
    label_ = label;
    startNs_ = monotonicNowNs();
  }
  void close() {
    if (!open_) return;
    open_ = false;
    std::string name = "backward " + (label_ ? *label_ : std::string("(no module)"));
    trace::complete(trace::Category::kCompute, std::move(name), startNs_, monotonicNowNs());
  }

 private:
  bool open_ = false;
  const std::string* label_ = nullptr;
  int64_t startNs_ = 0;
};

// The node feeding the root gradients into the graph.
class GraphRoot : public Node {
 public:
  GraphRoot(const std::vector<Edge>& edges, TensorList grads) : Node(0), grads_(std::move(grads)) {
    for (const Edge& e : edges) addNextEdge(e);
  }
  TensorList apply(TensorList&&) override { return std::move(grads_); }
  std::string name() const override { return "GraphRoot"; }

 private:
  TensorList grads_;
};

// Note [Engine order]
// Ready nodes are ordered by sequence number, largest first: a node created
// later in forward runs earlier in backward, matching PyTorch's CPU engine.
// AccumulateGrad has the largest possible number, so a leaf's gradient is
// accumulated (and its hooks fire) the moment it is complete.
struct LaterFirst {
  bool operator()(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) const {
    return a->sequenceNr() < b->sequenceNr();
  }
};

std::unordered_map<Node*, int> countDependencies(Node* root) {
  std::unordered_map<Node*, int> deps;
  std::unordered_set<Node*> seen{root};
  std::vector<Node*> stack{root};
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& e : node->nextEdges()) {
      if (!e.isValid()) continue;
      Node* next = e.function.get();
      ++deps[next];
      if (seen.insert(next).second) stack.push_back(next);
    }
  }
  return deps;
}

void addToBuffer(Tensor& slot, Tensor grad) {
  if (!grad.defined()) return;
  slot = slot.defined() ? slot.add(grad) : std::move(grad);
}

std::shared_ptr<GraphRoot> makeRoot(const TensorList& tensors, const TensorList& grads) {
  DL_CHECK_T(ValueError, grads.empty() || grads.size() == tensors.size(), "backward: got ",
             grads.size(), " gradients for ", tensors.size(), " tensors");
  std::vector<Edge> edges;
  TensorList rootGrads;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    DL_CHECK_T(ValueError, t.defined() && t.requiresGrad(), "element ", i,
               " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grads.empty() ? Tensor() : grads[i];
    if (!g.defined()) {
      DL_CHECK_T(ValueError, t.numel() == 1,
                 "grad can be implicitly created only for scalar outputs (tensor ", i,
                 " has shape ", shapeToString(t.sizes()), ")");
      g = ones(t.sizes(), TensorOptions{t.dtype(), t.device(), false});
    } else {
      DL_CHECK_T(ValueError, g.sizes() == t.sizes(), "backward: grad ", i, " has shape ",
                 shapeToString(g.sizes()), " but the tensor has shape ", shapeToString(t.sizes()));
      g = g.detach();  // Note [Stealing the first gradient] in node.cpp
    }
    edges.push_back(gradientEdge(t));
    rootGrads.push_back(std::move(g));
  }
  return std::make_shared<GraphRoot>(edges, std::move(rootGrads));
}

}  // namespace

void backward(const TensorList& tensors, const TensorList& grads, bool retainGraph) {
  auto root = makeRoot(tensors, grads);
  if (observerSkipsBackward()) return;  // a skip_backward fault (Note [Training observer])
  GraphTask task;
  TaskScope scope(&task);
  trace::Span phase(trace::Category::kPhase, "backward");
  ModuleSpans spans;
  NoGradGuard noGrad;
  auto deps = countDependencies(root.get());
  std::unordered_map<Node*, TensorList> buffers;
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, LaterFirst> ready;
  ready.push(root);
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.top();
    ready.pop();
    TensorList inputs;
    if (auto it = buffers.find(node.get()); it != buffers.end()) {
      inputs = std::move(it->second);
      buffers.erase(it);
    }
    inputs.resize(node->numInputs());
    spans.enter(*node);
    node->runPreHooks(inputs);
    TensorList outputs = node->apply(std::move(inputs));
    if (!retainGraph) node->releaseVariables();
    const auto& edges = node->nextEdges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.isValid()) continue;
      TensorList& buf = buffers[e.function.get()];
      if (buf.empty()) buf.resize(e.function->numInputs());
      // A fresh handle per edge: a node may send one tensor along several edges
      // (add's backward passes its gradient through to both inputs); separate
      // handles make the sharing visible to AccumulateGrad's steal check.
      if (i < outputs.size() && outputs[i].defined()) {
        addToBuffer(buf[e.inputNr], outputs[i].detach());
      }
      if (--deps[e.function.get()] == 0) ready.push(e.function);
    }
  }
  spans.close();
  // Callbacks may queue more callbacks; index, do not iterate.
  for (size_t i = 0; i < task.callbacks.size(); ++i) {
    auto callback = std::move(task.callbacks[i]);
    callback();
  }
}

void backward(const Tensor& tensor, const Tensor& grad, bool retainGraph) {
  backward(TensorList{tensor}, TensorList{grad}, retainGraph);
}

void queueCallback(std::function<void()> callback) {
  if (tCurrentTask == nullptr) {
    throw Error("Final callbacks can only be installed during backward pass.");
  }
  tCurrentTask->callbacks.push_back(std::move(callback));
}

bool isBackwardRunning() { return tCurrentTask != nullptr; }

TensorList reachableLeaves(const TensorList& outputs) {
  TensorList leaves;
  std::unordered_set<const void*> seenLeaves;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  auto addLeaf = [&](const Tensor& leaf) {
    if (seenLeaves.insert(leaf.impl()).second) leaves.push_back(leaf);
  };
  for (const Tensor& out : outputs) {
    if (!out.defined() || !out.requiresGrad()) continue;
    if (out.isLeaf()) {
      addLeaf(out);
      continue;
    }
    Node* fn = out.autogradMeta()->gradFn.get();
    if (seen.insert(fn).second) stack.push_back(fn);
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (auto* acc = dynamic_cast<AccumulateGrad*>(node)) addLeaf(acc->variable());
    for (const Edge& e : node->nextEdges()) {
      if (e.isValid() && seen.insert(e.function.get()).second) stack.push_back(e.function.get());
    }
  }
  return leaves;
}

}  // namespace distlab::autograd
