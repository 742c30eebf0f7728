#include "runtime/autograd/node.hpp"

#include <atomic>
#include <limits>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::autograd {
namespace {

std::atomic<uint64_t> gSequenceNr{0};
std::atomic<uint64_t> gHookId{0};

// Note [Stealing the first gradient]
// PyTorch makes the incoming gradient the new `.grad` (no copy) when nothing
// else references it. Here a gradient's storage referenced by a single handle
// is safe to steal: the engine gives every gradient it routes its own handle
// (user-supplied root gradients, hook results, and each edge of a node's
// output), so a caller's handle or a second consumer of the same gradient
// always shows up as a second reference to the storage.
bool canSteal(const Tensor& grad, const Tensor& variable) {
  return grad.storage().use_count() == 1 && grad.isContiguous() &&
         grad.sizes() == variable.sizes() && grad.strides() == variable.strides() &&
         grad.dtype() == variable.dtype() && grad.autogradMeta() == nullptr;
}

}  // namespace

uint64_t nextHookId() { return ++gHookId; }

Node::Node(uint32_t numInputs) : Node(numInputs, gSequenceNr.fetch_add(1)) {}

Node::Node(uint32_t numInputs, uint64_t sequenceNr)
    : numInputs_(numInputs), sequenceNr_(sequenceNr) {}

uint64_t Node::addPreHook(uint32_t inputNr, GradHook hook) {
  DL_CHECK_T(ValueError, inputNr < numInputs_, "addPreHook on ", name(), ": input ", inputNr,
             " out of range (node has ", numInputs_, " inputs)");
  const uint64_t id = nextHookId();
  preHooks_.emplace(id, std::make_pair(inputNr, std::move(hook)));
  return id;
}

bool Node::removePreHook(uint64_t id) { return preHooks_.erase(id) > 0; }

void Node::runPreHooks(TensorList& grads) const {
  for (const auto& [id, entry] : preHooks_) {
    Tensor& grad = grads[entry.first];
    if (!grad.defined()) continue;
    Tensor replaced = entry.second(grad);
    if (replaced.defined()) grad = replaced.detach();
  }
}

// ---- AccumulateGrad -----------------------------------------------------------

AccumulateGrad::AccumulateGrad(Tensor variable)
    : Node(1, std::numeric_limits<uint64_t>::max()), variable_(std::move(variable)) {}

TensorList AccumulateGrad::apply(TensorList&& grads) {
  Tensor incoming = std::move(grads[0]);
  if (!incoming.defined()) return {};
  NoGradGuard noGrad;
  AutogradMeta& meta = variable_.ensureAutogradMeta();
  for (const auto& [id, hook] : meta.gradHooks) {
    Tensor replaced = hook(incoming);
    if (replaced.defined()) incoming = replaced.detach();
  }
  DL_CHECK(incoming.sizes() == variable_.sizes(), "AccumulateGrad: gradient of shape ",
           shapeToString(incoming.sizes()), " for a leaf of shape ",
           shapeToString(variable_.sizes()));
  if (!meta.grad.defined()) {
    meta.grad = canSteal(incoming, variable_) ? incoming : incoming.to(variable_.dtype()).clone();
  } else {
    meta.grad.add_(incoming);
  }
  // Copy the map: a hook may remove itself.
  auto hooks = meta.postAccumulateGradHooks;
  for (auto& [id, hook] : hooks) hook(variable_);
  return {};
}

// ---- FunctionNode -------------------------------------------------------------

FunctionNode::FunctionNode(std::string name, uint32_t numInputs, BackwardFn fn, bool savesTensors)
    : Node(numInputs), name_(std::move(name)), fn_(std::move(fn)), savesTensors_(savesTensors) {
  if (trace::enabled()) traceScope_ = trace::currentScope();
}

TensorList FunctionNode::apply(TensorList&& grads) {
  if (released_ && savesTensors_) {
    throw Error(
        "Trying to backward through the graph a second time (or directly access saved tensors "
        "after they have already been freed). Saved intermediate values of the graph are freed "
        "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
        "backward through the graph a second time or if you need to access saved tensors after "
        "calling backward. (node: " +
        name_ + ")");
  }
  bool any = false;
  for (const Tensor& g : grads) any = any || g.defined();
  const auto& edges = nextEdges();
  if (!any) return TensorList(edges.size());
  std::vector<bool> needs(edges.size());
  for (size_t i = 0; i < edges.size(); ++i) needs[i] = edges[i].isValid();
  TensorList out = fn_(grads, needs);
  DL_CHECK_EQ(out.size(), edges.size(), "backward of ", name_, " returned a wrong number of grads");
  return out;
}

void FunctionNode::releaseVariables() {
  released_ = true;
  if (savesTensors_) fn_ = nullptr;
}

// ---- recording helpers --------------------------------------------------------

std::shared_ptr<Node> gradAccumulator(const Tensor& leaf) {
  DL_CHECK_T(ValueError, leaf.defined() && leaf.requiresGrad() && leaf.isLeaf(),
             "gradAccumulator: the tensor must be a leaf that requires grad");
  AutogradMeta* meta = leaf.autogradMeta();
  if (auto existing = meta->gradAccumulator.lock()) return existing;
  auto created = std::make_shared<AccumulateGrad>(leaf);
  meta->gradAccumulator = created;
  return created;
}

Edge gradientEdge(const Tensor& t) {
  if (!t.defined() || !t.requiresGrad()) return {};
  const AutogradMeta* meta = t.autogradMeta();
  if (meta->gradFn) return {meta->gradFn, meta->outputNr};
  return {gradAccumulator(t), 0};
}

bool shouldRecord(const TensorList& inputs) {
  if (!GradMode::isEnabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requiresGrad()) return true;
  }
  return false;
}

void recordFunction(const std::string& name,
                    const TensorList& inputs,
                    TensorList& outputs,
                    BackwardFn fn,
                    bool savesTensors) {
  if (!shouldRecord(inputs)) return;
  auto node = std::make_shared<FunctionNode>(name, static_cast<uint32_t>(outputs.size()),
                                             std::move(fn), savesTensors);
  for (const Tensor& input : inputs) node->addNextEdge(gradientEdge(input));
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    if (out.autogradMeta() != nullptr) out = out.detach();
    AutogradMeta& meta = out.ensureAutogradMeta();
    meta.requiresGrad = true;
    meta.gradFn = node;
    meta.outputNr = static_cast<uint32_t>(i);
  }
}

Tensor recordFunction(const std::string& name,
                      const TensorList& inputs,
                      Tensor output,
                      BackwardFn fn,
                      bool savesTensors) {
  TensorList outs{std::move(output)};
  recordFunction(name, inputs, outs, std::move(fn), savesTensors);
  return std::move(outs[0]);
}

}  // namespace distlab::autograd
