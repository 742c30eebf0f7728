// fullyShard: parameter collection, validation, the FSDPModule registry and
// the controls. The hooks and the schedule are in fsdp_hooks.cpp.
#include "runtime/fsdp/fully_shard.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>

#include "runtime/autograd/multi_grad_hook.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/fsdp/fsdp_internal.hpp"

namespace distlab::fsdp {
namespace {

std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<const nn::Module*, std::weak_ptr<FSDPModule>>& registry() {
  static std::unordered_map<const nn::Module*, std::weak_ptr<FSDPModule>> r;
  return r;
}

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// The parameters fullyShard(module) takes: not ignored, not under a module
// already sharded. One entry per tensor (tied weights: several owners).
struct Collected {
  std::string fqn;
  Tensor tensor;
  std::vector<ParamOwner> owners;
};

void collect(nn::Module& m, const std::string& prefix, const std::vector<Tensor>& ignored,
             std::vector<Collected>& out, std::vector<FSDPModulePtr>& below) {
  for (const auto& [name, t] : m.namedParameters(/*recurse=*/false)) {
    bool skip = false;
    for (const auto& ig : ignored) skip = skip || ig.isSame(t);
    if (skip) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const Collected& c) { return c.tensor.isSame(t); });
    if (it != out.end()) {
      it->owners.push_back({&m, name});
    } else {
      out.push_back({join(prefix, name), t, {{&m, name}}});
    }
  }
  for (const auto& [name, child] : m.namedChildren()) {
    if (auto sharded = fsdpModuleOf(*child)) {
      for (auto& s : sharded->fsdpModulesInTree()) below.push_back(s);
      continue;
    }
    collect(*child, join(prefix, name), ignored, out, below);
  }
}

void checkNotShared(const std::vector<Collected>& params, const std::vector<FSDPModulePtr>& below) {
  for (const auto& c : params) {
    for (const auto& s : below) {
      for (const auto& p : s->paramGroup().params()) {
        DL_CHECK_T(ValueError, !p->madeFrom(c.tensor), "fully_shard: parameter '", c.fqn,
                   "' is shared with parameter '", p->fqn(), "' of the group of an inner ",
                   s->module().typeName(), " (a parameter can be in one FSDP group only); ",
                   "apply fully_shard to a module that contains both users");
      }
    }
  }
}

comm::DeviceMesh resolveMesh(const FullyShardOptions& options, const std::vector<Collected>& params) {
  comm::DeviceMesh mesh = options.mesh ? *options.mesh
                                       : comm::DeviceMesh::fromGroups({comm::defaultGroup()}, "cpu");
  DL_CHECK_T(ValueError, mesh.ndim() == 1 || mesh.ndim() == 2, "fully_shard: mesh has ",
             mesh.ndim(), " dimensions; use 1 (FSDP) or 2 (HSDP: replicate x shard)");
  DL_CHECK_T(ValueError, mesh.getCoordinate().has_value(), "fully_shard: rank ", mesh.getRank(),
             " is not in the mesh; every rank that runs the model must be in it");
  for (const auto& c : params) {
    DL_CHECK_T(ValueError, c.tensor.device().isCpu() == (mesh.deviceType() == "cpu"),
               "fully_shard: the mesh's device type is '", mesh.deviceType(), "' but parameter '",
               c.fqn, "' is on ", c.tensor.device().str(), "; use a matching mesh");
  }
  return mesh;
}

std::unique_ptr<FSDPParamGroup> makeGroup(std::vector<Collected>& collected,
                                          const comm::DeviceMesh& mesh,
                                          const FullyShardOptions& options) {
  std::vector<std::unique_ptr<FSDPParam>> params;
  for (auto& c : collected) {
    dtensor::Placement placement = dtensor::Placement::shard(0);
    if (options.shardPlacementFn) {
      if (auto p = options.shardPlacementFn(c.fqn, c.tensor)) placement = *p;
    }
    DL_CHECK_T(ValueError, placement.isShard(), "fully_shard: shard_placement_fn returned ",
               placement.str(), " for '", c.fqn, "'; it must return Shard(d) or nullopt");
    const DType dtype = options.mpPolicy.paramDtype.value_or(c.tensor.dtype());
    params.push_back(std::make_unique<FSDPParam>(c.fqn, c.owners, c.tensor, mesh, placement, dtype,
                                                 options.offloadPolicy));
    c.tensor = Tensor();  // the original may be freed now
  }
  return std::make_unique<FSDPParamGroup>(std::move(params), mesh, options.mpPolicy, nullptr);
}

void checkReshardOption(const FullyShardOptions& options, const comm::DeviceMesh& mesh) {
  if (!options.reshardAfterForward) return;
  if (const int* n = std::get_if<int>(&*options.reshardAfterForward)) {
    const int64_t world = mesh.shape().back();
    DL_CHECK_T(ValueError, *n >= 1 && *n <= world && world % *n == 0,
               "fully_shard: reshard_after_forward=", *n, " must be a factor of the shard world ",
               "size ", world, " (the world size to reshard to after forward; 1 = false, ",
               world, " = true)");
  }
}

// The prefix of module i's parameters in messages: "" for one module.
std::string listPrefix(size_t count, size_t i) {
  return count == 1 ? std::string() : "modules[" + std::to_string(i) + "]";
}

}  // namespace

FSDPModulePtr fsdpModuleOf(const nn::Module& module) {
  std::lock_guard<std::mutex> lock(registryMutex());
  auto it = registry().find(&module);
  return it == registry().end() ? nullptr : it->second.lock();
}

FSDPModulePtr fullyShard(const std::shared_ptr<nn::Module>& module, FullyShardOptions options) {
  DL_CHECK_T(ValueError, module != nullptr, "fully_shard: module is null");
  return fullyShard(std::vector<std::shared_ptr<nn::Module>>{module}, std::move(options));
}

FSDPModulePtr fullyShard(const std::vector<std::shared_ptr<nn::Module>>& modules,
                         FullyShardOptions options) {
  DL_CHECK_T(ValueError, !modules.empty(), "fully_shard: the module list is empty; pass at "
             "least one module");
  std::vector<Collected> collected;
  std::vector<FSDPModulePtr> below;
  std::vector<nn::Module*> raw;
  for (size_t i = 0; i < modules.size(); ++i) {
    const auto& m = modules[i];
    DL_CHECK_T(ValueError, m != nullptr, "fully_shard: module ", i, " of the list is null");
    DL_CHECK_T(ValueError, fsdpModuleOf(*m) == nullptr, "fully_shard: this ", m->typeName(),
               " is already sharded (fully_shard was applied to it twice); apply it once per ",
               "module");
    DL_CHECK_T(ValueError, std::find(raw.begin(), raw.end(), m.get()) == raw.end(),
               "fully_shard: module ", i, " (", m->typeName(), ") appears twice in the list");
    collect(*m, listPrefix(modules.size(), i), options.ignoredParams, collected, below);
    raw.push_back(m.get());
  }
  checkNotShared(collected, below);
  comm::DeviceMesh mesh = resolveMesh(options, collected);
  checkReshardOption(options, mesh);
  auto group = makeGroup(collected, mesh, options);
  options.mesh = mesh;
  auto state = std::make_shared<FSDPModule>(raw, std::move(options), std::move(group));
  installHooks(state);
  std::lock_guard<std::mutex> lock(registryMutex());
  for (nn::Module* m : raw) registry()[m] = state;
  return state;
}

FSDPModule::FSDPModule(std::vector<nn::Module*> modules, FullyShardOptions options,
                       std::unique_ptr<FSDPParamGroup> group)
    : modules_(std::move(modules)), options_(std::move(options)), group_(std::move(group)) {
  GroupSettings& s = group_->settings();
  if (options_.reshardAfterForward) {
    const auto& v = *options_.reshardAfterForward;
    s.reshardAfterForward = std::holds_alternative<bool>(v) ? std::get<bool>(v) : std::get<int>(v) != 1;
  }
}

FSDPModule::~FSDPModule() {
  std::lock_guard<std::mutex> lock(registryMutex());
  for (nn::Module* m : modules_) {
    auto it = registry().find(m);
    if (it != registry().end() && it->second.expired()) registry().erase(it);
  }
}

std::vector<FSDPModulePtr> FSDPModule::fsdpModulesInTree() const {
  std::vector<FSDPModulePtr> out;
  for (nn::Module* root : modules_) {
    for (const auto& [name, m] : root->namedModules()) {
      auto s = fsdpModuleOf(*m);
      if (s && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
  }
  return out;
}

std::vector<FSDPModule*> FSDPModule::tree(bool recurse) {
  if (!recurse) return {this};
  std::vector<FSDPModule*> out;
  for (auto& s : fsdpModulesInTree()) out.push_back(s.get());
  return out;
}

void FSDPModule::setRequiresGradientSync(bool value, bool recurse) {
  for (auto* s : tree(recurse)) s->group_->settings().requiresGradientSync = value;
}
void FSDPModule::setRequiresAllReduce(bool value, bool recurse) {
  for (auto* s : tree(recurse)) s->group_->settings().requiresAllReduce = value;
}
void FSDPModule::setReshardAfterForward(bool value, bool recurse) {
  for (auto* s : tree(recurse)) {
    s->group_->settings().reshardAfterForward = value;
    s->group_->setPostForwardGroup(nullptr);
    s->options_.reshardAfterForward = value;
  }
}
void FSDPModule::setIsLastBackward(bool value) {
  for (auto* s : tree(true)) s->isLastBackward_ = value;
  if (ctx_) ctx_->isLastBackward = value;
}
void FSDPModule::setReshardAfterBackward(bool value, bool recurse) {
  for (auto* s : tree(recurse)) s->group_->settings().reshardAfterBackward = value;
}
void FSDPModule::setUnshardInBackward(bool value) { group_->settings().unshardInBackward = value; }
void FSDPModule::setGradientDivideFactor(double factor) {
  DL_CHECK_T(ValueError, factor > 0, "set_gradient_divide_factor: factor ", factor,
             " must be positive");
  for (auto* s : tree(true)) s->group_->settings().gradientDivideFactor = factor;
}
void FSDPModule::setForceSumReductionForComms(bool value) {
  for (auto* s : tree(true)) s->group_->settings().forceSumReduction = value;
}
void FSDPModule::setAllReduceHook(std::function<void(Tensor&)> hook) {
  group_->settings().allReduceHook = std::move(hook);
}

void FSDPModule::setModulesToForwardPrefetch(std::vector<FSDPModulePtr> modules) {
  forwardPrefetch_.assign(modules.begin(), modules.end());
  explicitForward_ = true;
}
void FSDPModule::setModulesToBackwardPrefetch(std::vector<FSDPModulePtr> modules) {
  backwardPrefetch_.assign(modules.begin(), modules.end());
  explicitBackward_ = true;
}

std::shared_ptr<UnshardHandle> FSDPModule::unshard(bool async) {
  group_->unshard();
  auto handle = std::make_shared<UnshardHandle>(weak_from_this());
  if (!async) handle->wait();
  return handle;
}

void UnshardHandle::wait() {
  if (auto owner = owner_.lock()) owner->paramGroup().waitForUnshard();
}

void FSDPModule::reshard() { group_->reshard(); }

ForwardMethod registerFsdpForwardMethod(nn::Module& module, ForwardMethod method) {
  auto state = fsdpModuleOf(module);
  if (!state) return method;
  std::weak_ptr<FSDPModule> weak = state;
  return [weak, method](const nn::TensorList& inputs) {
    auto s = weak.lock();
    return s ? s->callAsForward(method, inputs) : method(inputs);
  };
}

}  // namespace distlab::fsdp
