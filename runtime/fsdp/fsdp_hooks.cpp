// The FSDP schedule: forward/backward hooks, the root's lazy initialisation,
// prefetching and the end-of-backward callback.
//
// Note [FSDP schedule]
// The first FSDP module whose pre-forward runs becomes the root: it collects the
// FSDP modules below it (pre-order) into one RootContext and resolves unset
// reshardAfterForward (false for itself). Per step:
//  pre-forward(g): wait for g's all-gather (issue it if no prefetch did), copy
//    out, register unsharded params; then prefetch: the modules given by
//    setModulesToForwardPrefetch, else (implicit) the module after g in the
//    previous step's forward order (pre-order in the first step). The all-gather
//    runs on the group's progress thread while g computes.
//  post-forward(g): reshard when reshardAfterForward; put a kAny multi-grad hook
//    on g's outputs, which is g's pre-backward.
//  pre-backward(g): the first one queues the root's end-of-backward callback;
//    re-gather g if resharded; prefetch one module ahead in reverse post-forward
//    order (or setModulesToBackwardPrefetch's).
//  post-backward(g): a kAll post-accumulate multi-grad hook over g's unsharded
//    parameters: reduce-scatter (async) and reshard.
//  end of backward (root): post-backward for groups whose hook did not fire
//    (unused parameters), then -- on the last backward (setIsLastBackward,
//    default true) -- wait for every reduction and set sharded grads. After a
//    backward that is not last the reductions stay in flight; a group's next
//    reduce-scatter first waits for its pending one (accumulating it into the
//    sharded grads), so at most one is pending per group.
// Every phase is a kPhase trace span "fsdp <phase> <module>"; waits for
// collectives are kWait spans, copy-in/copy-out kCompute (the collectives
// themselves get kComm spans from the process group).
//
// Note [Group forward hooks]
// A group of several modules (fullyShard({m1, m2})) has hooks on each module:
// the group's pre-forward runs at the first of its modules to start a forward
// (or whenever a module starts while the group is resharded), its post-forward
// when every module of the group has finished; the pre-backward hook is put on
// the outputs of all of the group's modules, so it fires at the first gradient
// flowing into any of them. A module of the group that does not run in a
// forward leaves the group unsharded until the end of backward; the root's
// pre-forward starts every group afresh.
#include <algorithm>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/training_observer.hpp"
#include "runtime/autograd/multi_grad_hook.hpp"
#include "runtime/autograd/ops_cast.hpp"
#include "runtime/core/check.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/trace.hpp"
#include "runtime/fsdp/fsdp_internal.hpp"

namespace distlab::fsdp {
namespace {

nn::TensorList castFloating(const nn::TensorList& list, DType dtype) {
  nn::TensorList out;
  for (const auto& t : list) {
    out.push_back(t.defined() && isFloatingPoint(t.dtype()) && t.dtype() != dtype
                      ? ops::toDType(t, dtype)
                      : t);
  }
  return out;
}

bool sameMesh(const comm::DeviceMesh& a, const comm::DeviceMesh& b) {
  return a.shape() == b.shape() && a.mesh() == b.mesh();
}

// The module after `self` in `order` (nullptr when last or absent).
FSDPModule* nextIn(const std::vector<FSDPModule*>& order, const FSDPModule* self) {
  auto it = std::find(order.begin(), order.end(), self);
  return (it == order.end() || it + 1 == order.end()) ? nullptr : *(it + 1);
}

// Issues the all-gathers of the modules still alive in `list` (explicit prefetch).
void unshardAll(const std::vector<std::weak_ptr<FSDPModule>>& list) {
  for (const auto& w : list) {
    if (auto s = w.lock()) s->paramGroup().unshard();
  }
}

}  // namespace

void installHooks(const FSDPModulePtr& state) {
  // The modules' hooks own the state (the modules outlive their hooks).
  for (nn::Module* m : state->modules()) {
    m->registerForwardPreHook([state](nn::Module& self, const nn::TensorList& in) {
      return state->modulePreForward(self, in);
    });
    m->registerForwardHook(
        [state](nn::Module& self, const nn::TensorList&, const nn::TensorList& out) {
          return state->modulePostForward(self, out);
        });
  }
  state->paramGroup().setTraceOwner(&state->module());
  std::weak_ptr<FSDPModule> weak = state;
  nn::TensorList leaves;
  for (const auto& p : state->paramGroup().params()) {
    if (p->requiresGrad()) leaves.push_back(p->unsharded());
  }
  if (leaves.empty()) return;
  autograd::registerMultiPostAccumulateGradHook(leaves, [weak](const nn::TensorList&) {
    if (auto s = weak.lock()) s->postBackward();
  });
}

bool FSDPModule::isRoot() const { return isRoot_; }

const MemoryStats& FSDPModule::memoryStats() const { return ctx_ ? ctx_->memory : emptyMemory_; }

void FSDPModule::setImplicitPrefetch(bool forward, bool backward) {
  lazyInit();
  ctx_->implicitForwardPrefetch = forward;
  ctx_->implicitBackwardPrefetch = backward;
}

void FSDPModule::lazyInit() {
  if (ctx_) return;
  auto ctx = std::make_shared<RootContext>();
  isRoot_ = true;
  for (auto& s : fsdpModulesInTree()) {
    DL_CHECK_T(ValueError, sameMesh(s->options_.mesh.value(), options_.mesh.value()),
               "fully_shard: an inner ", s->module().typeName(),
               " was sharded over a different mesh than the root ", module().typeName(),
               "; all fully_shard calls of one model must use the same mesh");
    if (s->ctx_) continue;  // already part of another root's tree
    s->ctx_ = ctx;
    ctx->modules.push_back(s.get());
    if (!s->options_.reshardAfterForward) {
      s->group_->settings().reshardAfterForward = s.get() != this;
    }
    s->group_->setMemory(&ctx->memory);
    for (const auto& p : s->group_->params()) ctx->memory.shardedParams.add(p->shardedBytes());
    s->resolvePostForwardGroup(ctx->postForwardGroups);
  }
  ctx->isLastBackward = isLastBackward_;
}

// An int reshardAfterForward N below the shard world: the consecutive N ranks
// of the shard group this rank is in (created once per N and root, by the
// members only). Note [Resharding to a smaller world].
void FSDPModule::resolvePostForwardGroup(std::map<int, comm::ProcessGroupPtr>& groups) {
  const auto& option = options_.reshardAfterForward;
  const int* n = option ? std::get_if<int>(&*option) : nullptr;
  const comm::DeviceMesh& mesh = options_.mesh.value();
  if (n == nullptr || *n <= 1 || *n >= mesh.shape().back()) return;
  auto it = groups.find(*n);
  if (it == groups.end()) {
    const int dim = mesh.ndim() - 1;
    std::vector<int> ranks = comm::getProcessGroupRanks(mesh.getGroup(std::optional<int>(dim)));
    const int start = mesh.getLocalRank(std::optional<int>(dim)) / *n * *n;
    comm::NewGroupOptions o;
    o.ranks.assign(ranks.begin() + start, ranks.begin() + start + *n);
    o.useLocalSynchronization = true;
    o.groupDesc = "fsdp_reshard_after_forward_" + std::to_string(*n);
    it = groups.emplace(*n, comm::newGroup(o)).first;
  }
  group_->setPostForwardGroup(it->second);
}

std::optional<nn::TensorList> FSDPModule::modulePreForward(nn::Module& /*m*/,
                                                           const nn::TensorList& inputs) {
  if (!notYetForwarded_.empty() && group_->isUnsharded()) return std::nullopt;
  notYetForwarded_ = modules_;
  earlierOutputs_.clear();
  return preForward(inputs);
}

std::optional<nn::TensorList> FSDPModule::modulePostForward(nn::Module& m,
                                                            const nn::TensorList& outputs) {
  notYetForwarded_.erase(std::remove(notYetForwarded_.begin(), notYetForwarded_.end(), &m),
                         notYetForwarded_.end());
  if (notYetForwarded_.empty()) return postForward(outputs);
  for (const auto& t : outputs) {
    if (t.defined() && t.requiresGrad()) earlierOutputs_.push_back(t);
  }
  return std::nullopt;
}

std::optional<nn::TensorList> FSDPModule::preForward(const nn::TensorList& inputs) {
  lazyInit();
  trace::Span span(trace::Category::kPhase, "fsdp pre-forward ", *module().traceLabel());
  if (isRoot_ && autograd::GradMode::isEnabled()) {
    notifyTrainingStepBegins();  // Note [Training observer]
  }
  if (isRoot_) {
    ctx_->forwardOrder.clear();
    ctx_->postForwardOrder.clear();
    for (auto* s : ctx_->modules) {
      s->group_->resetForNextBackward();
      if (s != this) s->notYetForwarded_.clear();
    }
  }
  if (isRoot_ && ctx_->joinable) {  // Note [FSDP under Join]
    ctx_->join->beginIteration(join::Join::notifyJoinContext(*ctx_->joinable));
  }
  ctx_->forwardOrder.push_back(this);
  group_->waitForUnshard();
  prefetchForward();
  const MixedPrecisionPolicy& mp = options_.mpPolicy;
  if (mp.paramDtype && mp.castForwardInputs) return castFloating(inputs, *mp.paramDtype);
  return std::nullopt;
}

void FSDPModule::prefetchForward() {
  if (explicitForward_) return unshardAll(forwardPrefetch_);
  if (!ctx_->implicitForwardPrefetch) return;
  const auto& order = ctx_->lastForwardOrder.empty() ? ctx_->modules : ctx_->lastForwardOrder;
  if (FSDPModule* next = nextIn(order, this)) next->group_->unshard();
}

std::optional<nn::TensorList> FSDPModule::postForward(const nn::TensorList& outputs) {
  trace::Span span(trace::Category::kPhase, "fsdp post-forward ", *module().traceLabel());
  if (group_->settings().reshardAfterForward) group_->reshardAfterForward();
  ctx_->postForwardOrder.push_back(this);
  if (isRoot_) ctx_->lastForwardOrder = ctx_->forwardOrder;
  nn::TensorList result = outputs;
  if (options_.mpPolicy.outputDtype) result = castFloating(outputs, *options_.mpPolicy.outputDtype);
  registerPreBackward(result);
  if (options_.mpPolicy.outputDtype) return result;
  return std::nullopt;
}

// A kAny multi-grad hook over the outputs (and those of the group's modules
// that ran earlier in this forward) that need a gradient: the pre-backward.
void FSDPModule::registerPreBackward(const nn::TensorList& outputs) {
  nn::TensorList needGrad = std::move(earlierOutputs_);
  earlierOutputs_.clear();
  for (const auto& t : outputs) {
    if (t.defined() && t.requiresGrad()) needGrad.push_back(t);
  }
  if (needGrad.empty() || !autograd::GradMode::isEnabled()) return;
  std::weak_ptr<FSDPModule> weak = weak_from_this();
  autograd::registerMultiGradHook(needGrad, [weak](const nn::TensorList&) {
    if (auto s = weak.lock()) s->preBackward();
  }, autograd::MultiGradMode::kAny, /*once=*/true);
}

void FSDPModule::preBackward() {
  trace::Span span(trace::Category::kPhase, "fsdp pre-backward ", *module().traceLabel());
  RootContext& ctx = *ctx_;
  if (!ctx.inBackward) {
    ctx.inBackward = true;
    FSDPModule* root = ctx.modules.front();
    std::weak_ptr<FSDPModule> weak = root->weak_from_this();
    autograd::queueCallback([weak] {
      if (auto r = weak.lock()) r->finalBackwardCallback();
    });
  }
  if (group_->settings().unshardInBackward) group_->waitForUnshard();
  prefetchBackward();
}

void FSDPModule::prefetchBackward() {
  if (explicitBackward_) return unshardAll(backwardPrefetch_);
  if (!ctx_->implicitBackwardPrefetch) return;
  std::vector<FSDPModule*> reverse(ctx_->postForwardOrder.rbegin(), ctx_->postForwardOrder.rend());
  FSDPModule* next = nextIn(reverse, this);
  if (next && next->group_->settings().unshardInBackward && !next->group_->postBackwardDone()) {
    next->group_->unshard();
  }
}

void FSDPModule::postBackward() {
  if (!ctx_ || !ctx_->inBackward) return;  // a backward that FSDP's forward did not see
  trace::Span span(trace::Category::kPhase, "fsdp post-backward ", *module().traceLabel());
  sampleGradientBytes();  // unsharded gradients at their largest, before the reduction
  group_->postBackward();
  sampleGradientBytes();
}

void FSDPModule::sampleGradientBytes() {
  size_t bytes = 0;
  for (auto* s : ctx_->modules) bytes += s->group_->gradientBytes();
  ctx_->memory.gradients.set(bytes);
}

void FSDPModule::finalBackwardCallback() {
  trace::Span span(trace::Category::kPhase, "fsdp end of backward");
  RootContext& ctx = *ctx_;
  sampleGradientBytes();
  for (auto* s : ctx.modules) s->group_->postBackward();
  sampleGradientBytes();
  if (ctx.isLastBackward) {
    for (auto* s : ctx.modules) s->group_->finishReduction();
  }
  sampleGradientBytes();
  ctx.inBackward = false;
  // The sharded .grads are set: Note [Training observer].
  if (ctx.isLastBackward) notifyGradientsReady(module().parameters());
}

nn::TensorList FSDPModule::callAsForward(const ForwardMethod& method, const nn::TensorList& inputs) {
  nn::TensorList args = inputs;
  if (auto replaced = preForward(args)) args = std::move(*replaced);
  nn::TensorList outputs = method(args);
  if (auto replaced = postForward(outputs)) outputs = std::move(*replaced);
  return outputs;
}

}  // namespace distlab::fsdp
