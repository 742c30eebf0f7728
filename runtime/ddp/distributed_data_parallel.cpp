#include "runtime/ddp/distributed_data_parallel.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/training_observer.hpp"
#include "runtime/core/debug_level.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"
#include "runtime/core/trace.hpp"
#include "runtime/nn/detached_parameters.hpp"

namespace distlab::ddp {
namespace {

nn::NamedTensors trainableParameters(const nn::Module& module) {
  nn::NamedTensors out;
  for (auto& [name, p] : module.namedParameters()) {
    if (p.requiresGrad()) out.emplace_back(name, p);
  }
  return out;
}

std::vector<std::string> trainableParameterNames(const nn::Module& module) {
  std::vector<std::string> names;
  for (auto& [name, p] : trainableParameters(module)) names.push_back(name);
  return names;
}

const Tensor& findParam(const nn::NamedTensors& params, const std::string& name,
                        const char* option) {
  for (const auto& [n, p] : params) {
    if (n == name) return p;
  }
  std::string known;
  for (const auto& [n, p] : params) known += (known.empty() ? "" : ", ") + n;
  throw ValueError(fmt::format(
      "DDPOptions: {} names '{}', which is not a parameter of the module requiring grad "
      "(parameters: {})",
      option, name, known));
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                                 comm::ProcessGroupPtr group, DDPOptions options)
    : nn::Module("DistributedDataParallel"),
      module_(std::move(module)),
      group_(std::move(group)),
      options_(std::move(options)) {
  validate(options_);
  const RuntimeEnv env = readRuntimeEnv();  // before any collective: a bad value fails alone
  if (!module_) throw ValueError("DistributedDataParallel: module is null");
  if (!group_ || !group_->isMember()) {
    throw ValueError(
        "DistributedDataParallel: needs a process group this rank is a member of (create it "
        "with initProcessGroup/newGroup before constructing DDP)");
  }
  registerModule("module", module_);
  setTraceCategory(trace::Category::kPhase);  // the wrapped module's spans are the compute
  const nn::NamedTensors params = trainableParameters(*module_);
  if (params.empty()) {
    throw Error(
        "DistributedDataParallel is not needed when a module doesn't have any parameter that "
        "requires a gradient.");
  }
  if (options_.initSync) {
    std::vector<Tensor> all;
    for (const auto& [n, p] : params) all.push_back(p);
    verifyParamsAcrossProcesses(group_, all);
    std::vector<Tensor> states = module_->parameters();
    for (const Tensor& b : module_->buffers()) states.push_back(b);
    broadcastCoalesced(group_, states, kBroadcastBucketBytes, 0);
  }
  setUpDelayedAllReduce(params);
  buildReducer(params, env);
  fillConstructionData(env);
  if (debugLevel() != DebugLevel::kOff) DL_LOG(INFO, "{}", formatInitLog(logging_));
}

DistributedDataParallel::~DistributedDataParallel() { delayedHookHandle_.remove(); }

void DistributedDataParallel::buildReducer(const nn::NamedTensors& params,
                                           const RuntimeEnv& env) {
  const std::set<std::string> delayed(options_.delayAllReduceNamedParams.begin(),
                                      options_.delayAllReduceNamedParams.end());
  std::vector<Tensor> tensors;
  std::vector<std::string> names;
  std::vector<TensorSpec> specs;
  for (const auto& [name, p] : params) {
    if (delayed.count(name)) continue;
    tensors.push_back(p);
    names.push_back(name);
    specs.push_back(TensorSpec{p.numel(), p.dtype(), p.device()});
  }
  if (tensors.empty()) return;  // every all-reduce is delayed: no reducer
  // Note [Initial buckets] in reducer.hpp.
  std::vector<int64_t> limits;
  if (options_.staticGraph || !options_.findUnusedParameters) {
    limits = {kNoSizeLimit};
  } else if (!options_.bucketCapMb) {
    limits = {kDefaultFirstBucketBytes, options_.bucketBytesCap()};
  } else {
    limits = {options_.bucketBytesCap()};
  }
  BucketAssignment assignment = computeBucketAssignmentBySize(specs, limits);
  std::reverse(assignment.buckets.begin(), assignment.buckets.end());
  std::reverse(assignment.sizeLimits.begin(), assignment.sizeLimits.end());
  ReducerOptions ro;
  ro.bucketBytesCap = options_.bucketBytesCap();
  ro.firstBucketBytesCap = options_.firstBucketBytesCap();
  ro.findUnusedParameters = options_.findUnusedParameters;
  ro.gradientAsBucketView = options_.gradientAsBucketView;
  ro.staticGraph = options_.staticGraph;
  ro.skipAllReduceUnusedParams = options_.skipAllReduceUnusedParams;
  ro.setLastBucketCap = env.ddpSetLastBucketCap;
  reducer_ = std::make_unique<Reducer>(std::move(tensors), std::move(names),
                                       std::move(assignment.buckets),
                                       std::move(assignment.sizeLimits), group_, ro);
}

void DistributedDataParallel::setUpDelayedAllReduce(const nn::NamedTensors& params) {
  if (options_.delayAllReduceNamedParams.empty()) return;
  Tensor hookParam = findParam(params, options_.paramToHookAllReduce, "param_to_hook_all_reduce");
  int64_t numel = 0;
  for (const auto& name : options_.delayAllReduceNamedParams) {
    delayedParams_.push_back(findParam(params, name, "delay_all_reduce_named_params"));
    numel += delayedParams_.back().numel();
  }
  const DType dtype = delayedParams_.front().dtype();
  for (const Tensor& p : delayedParams_) {
    if (p.dtype() != dtype) {
      throw ValueError("DDPOptions: delay_all_reduce_named_params must share one dtype");
    }
  }
  delayedBuffer_ = zeros({numel}, TensorOptions{dtype, delayedParams_.front().device()});
  int64_t offset = 0;
  for (Tensor& p : delayedParams_) {
    delayedViews_.push_back(delayedBuffer_.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
    if (p.grad().defined()) delayedViews_.back().copy_(p.grad());
    p.setGrad(delayedViews_.back());
  }
  delayedHookHandle_ = autograd::registerHook(hookParam, [this](const Tensor&) {
    onDelayedAllReduceHook();
    return Tensor();
  });
}

void DistributedDataParallel::onDelayedAllReduceHook() {
  if (!delayedArmed_) return;
  delayedArmed_ = false;
  for (size_t i = 0; i < delayedParams_.size(); ++i) {
    Tensor& p = delayedParams_[i];
    Tensor& view = delayedViews_[i];
    const Tensor grad = p.grad();
    if (!grad.defined()) {
      view.zero_();
    } else if (!(grad.sharesStorageWith(view) && grad.storageOffset() == view.storageOffset())) {
      view.copy_(grad);
    }
    p.setGrad(view);
  }
  delayedBuffer_.div_(static_cast<double>(group_->size()));
  comm::WorkPtr work = group_->allreduce(delayedBuffer_);
  const auto timeout = group_->timeout();
  autograd::queueCallback([work, timeout] { work->wait(timeout); });
}

bool DistributedDataParallel::willSyncModuleBuffers() const {
  return requireForwardParamSync_ && options_.broadcastBuffers && group_->size() > 1 &&
         !module_->buffers().empty();
}

nn::TensorList DistributedDataParallel::forwardAll(const nn::TensorList& inputs) {
  const bool gradOn = autograd::GradMode::isEnabled();
  if (gradOn) notifyTrainingStepBegins();  // Note [Training observer]
  const bool sync = gradOn && requireBackwardGradSync_;
  if (sync) {
    updateRuntimeStats();
    if (reducer_) reducer_->prepareForForward();
  }
  // Note [DDP under Join] (ddp_join.cpp): the vote comes first.
  if (comm::WorkPtr vote = join::Join::notifyJoinContext(*this); vote && reducer_) {
    reducer_->setForwardPassWorkHandle(std::move(vote), divideByInitialWorldSize_);
  }
  if (gradOn && reducer_ && reducer_->rebuildBuckets()) {
    DL_LOG(INFO, "Reducer buckets have been rebuilt in this iteration.");
    logging_.hasRebuiltBuckets = true;
    logging_.rebuiltBucketSizes.clear();
    logging_.rebuiltPerBucketSizeLimits.clear();
    for (const BucketInfo& b : reducer_->bucketInfos()) {
      logging_.rebuiltBucketSizes.push_back(b.bytes());
      logging_.rebuiltPerBucketSizeLimits.push_back(b.sizeLimit);
    }
  }
  if (willSyncModuleBuffers()) syncModuleBuffers(/*joined=*/false);
  if (joinConfig().enable) checkGlobalRequiresBackwardGradSync(/*joined=*/false);
  nn::TensorList outputs;
  {
    // Note [Training observer]: an unused_param fault leaves parameters out.
    std::vector<std::string> leftOut;
    if (gradOn) leftOut = observerParametersLeftUnused([this] { return trainableParameterNames(*module_); });
    nn::DetachedParameters detached(*module_, leftOut);
    outputs = module_->call(inputs);
  }
  if (sync) {
    requireForwardParamSync_ = true;
    delayedArmed_ = !delayedParams_.empty();
    if (reducer_) {
      const bool search = options_.findUnusedParameters && !options_.staticGraph;
      reducer_->prepareForBackward(search ? outputs : nn::TensorList{});
    }
  } else {
    requireForwardParamSync_ = false;
    delayedArmed_ = false;
  }
  return outputs;
}

void DistributedDataParallel::registerCommHook(HookState state, CommHookFn hook,
                                               std::string name) {
  if (!reducer_) {
    throw Error(
        "register_comm_hook: every parameter's all-reduce is delayed "
        "(delay_all_reduce_named_params), so DDP has no buckets to hook");
  }
  if (reducer_->hasCommHook()) {
    throw Error("register_comm_hook or register_builtin_comm_hook can only be called once.");
  }
  if (reducer_->numIterations() > 0) {
    throw Error(fmt::format(
        "register_comm_hook must be called before the first forward/backward pass; {} "
        "iteration(s) already ran",
        reducer_->numIterations()));
  }
  reducer_->registerCommHook(std::move(state), std::move(hook), name);
  logging_.commHook = std::move(name);
}

void DistributedDataParallel::setStaticGraph() {
  if (options_.staticGraph) return;
  if (reducer_) reducer_->setStaticGraph();
  options_.staticGraph = true;
  logging_.staticGraph = true;
}

DistributedDataParallel::NoSyncGuard::NoSyncGuard(DistributedDataParallel& ddp)
    : ddp_(&ddp), previous_(ddp.requireBackwardGradSync_) {
  ddp.requireBackwardGradSync_ = false;
}

DistributedDataParallel::NoSyncGuard::NoSyncGuard(NoSyncGuard&& other) noexcept
    : ddp_(other.ddp_), previous_(other.previous_) {
  other.ddp_ = nullptr;
}

DistributedDataParallel::NoSyncGuard::~NoSyncGuard() {
  if (ddp_) ddp_->requireBackwardGradSync_ = previous_;
}

}  // namespace distlab::ddp
