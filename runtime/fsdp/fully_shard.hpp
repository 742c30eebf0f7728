#pragma once
// fullyShard (PyTorch: torch.distributed.fsdp.fully_shard) and FSDPModule.
//
// fullyShard(module, options) shards the parameters of `module` that no
// earlier fullyShard call on a submodule took (one communication group per
// call) along dim 0 (or shardPlacementFn's dim) over the mesh, replaces them in
// their modules with sharded leaf tensors (build the optimizer afterwards, on
// module->parameters()), and registers forward hooks; FQNs do not change.
// Apply it bottom-up: blocks first, then the root. The FSDPModule returned (also
// found later with fsdpModuleOf) carries the controls; the module keeps it alive.
//
// Per step (Note [FSDP schedule] in fsdp_hooks.cpp): pre-forward all-gathers
// (or waits for a prefetched all-gather) and points the module at unsharded
// parameters; post-forward reshards (per reshardAfterForward); backward
// re-gathers resharded groups before their backward, reduce-scatters each
// group's gradients once they are all accumulated, and the root's end-of-
// backward callback waits for the reductions and sets the sharded `.grad`s.
//
// fullyShard({m1, m2}, options) makes one group of the parameters of several
// modules (PyTorch: fully_shard([m1, m2])): one all-gather and one
// reduce-scatter for all of them; each module becomes an FSDP module sharing
// one FSDPModule (fsdpModuleOf(m1) == fsdpModuleOf(m2)). Note [Group forward
// hooks] in fsdp_hooks.cpp says when such a group unshards and reshards.
//
// Errors (ValueError naming the module or parameter and the fix): a module
// sharded twice, a parameter shared with another group, an uneven
// shardPlacementFn dim, a mesh this rank is not in / of the wrong device type /
// differing between nested calls, a reshardAfterForward int that does not
// divide the shard world, an empty module list. Collectives: all ranks must
// shard the same model the same way.
// Thread-safety: one module tree is used by one thread (its rank).
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "runtime/fsdp/fsdp_memory.hpp"
#include "runtime/fsdp/fsdp_options.hpp"
#include "runtime/fsdp/fsdp_param_group.hpp"
#include "runtime/join/join.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::fsdp {

class FSDPModule;
using FSDPModulePtr = std::shared_ptr<FSDPModule>;
using ForwardMethod = std::function<nn::TensorList(const nn::TensorList&)>;
struct RootContext;  // fsdp_hooks.cpp

// Returned by FSDPModule::unshard(async=true); wait() makes the unsharded
// parameters usable (copy-out) and registers them in the module.
class UnshardHandle {
 public:
  explicit UnshardHandle(std::weak_ptr<FSDPModule> owner) : owner_(std::move(owner)) {}
  void wait();

 private:
  std::weak_ptr<FSDPModule> owner_;
};

class FSDPModule : public std::enable_shared_from_this<FSDPModule> {
 public:
  // Use fullyShard(); the module's hooks own this object.
  FSDPModule(std::vector<nn::Module*> modules, FullyShardOptions options,
             std::unique_ptr<FSDPParamGroup> group);
  ~FSDPModule();
  FSDPModule(const FSDPModule&) = delete;
  FSDPModule& operator=(const FSDPModule&) = delete;

  // The (first) module; modules(): all modules of a fullyShard({...}) group.
  nn::Module& module() const { return *modules_.front(); }
  const std::vector<nn::Module*>& modules() const { return modules_; }
  FSDPParamGroup& paramGroup() { return *group_; }
  const FSDPParamGroup& paramGroup() const { return *group_; }
  const FullyShardOptions& options() const { return options_; }

  // ---- FSDPModule controls (PyTorch names in camelCase) ----------------------------
  // All-gathers this module's group (not recursive). async: returns a handle to
  // wait on (the next pre-forward also waits for it); otherwise waits.
  std::shared_ptr<UnshardHandle> unshard(bool async = false);
  void reshard();
  // `recurse`: this module and every FSDP module below it.
  void setRequiresGradientSync(bool value, bool recurse = true);
  void setRequiresAllReduce(bool value, bool recurse = true);
  // Also drops an int reshardAfterForward (true: reshard to the shard world).
  void setReshardAfterForward(bool value, bool recurse = true);
  void setReshardAfterBackward(bool value, bool recurse = true);
  void setUnshardInBackward(bool value);
  void setGradientDivideFactor(double factor);      // recursive, like PyTorch
  void setForceSumReductionForComms(bool value);    // recursive
  void setAllReduceHook(std::function<void(Tensor&)> hook);
  // Whether the next backward is the last one (tree-wide, default true). After
  // a backward that is not last, the end-of-backward callback leaves the
  // reduce-scatters in flight and the sharded `.grad`s unset; the next
  // reduce-scatter of a group first waits for its pending one and accumulates
  // it, and the last backward waits for all (gradient accumulation with
  // communication but without waiting; Note [FSDP schedule]). Call it on the
  // root, or on any module after the first forward.
  void setIsLastBackward(bool value);
  void setModulesToForwardPrefetch(std::vector<FSDPModulePtr> modules);
  void setModulesToBackwardPrefetch(std::vector<FSDPModulePtr> modules);
  // distlab extension for measurements: switches the implicit prefetches (next
  // group in the previous forward's order; one group ahead in reverse
  // post-forward order in backward) for the whole tree of this root.
  void setImplicitPrefetch(bool forward, bool backward);

  // Runs `method` with this module's pre/post-forward hooks around it
  // (PyTorch: register_fsdp_forward_method).
  nn::TensorList callAsForward(const ForwardMethod& method, const nn::TensorList& inputs);

  // ---- introspection ---------------------------------------------------------------
  bool isRoot() const;
  const CommCounts& commCounts() const { return group_->counts(); }
  // The memory of this module's root tree (zeros before the first forward).
  const MemoryStats& memoryStats() const;
  // This module and the FSDP modules below it, pre-order.
  std::vector<FSDPModulePtr> fsdpModulesInTree() const;

  // ---- Join (fsdp_join.hpp) ------------------------------------------------------------
  // Makes this module the root (as its first forward would), attaches a
  // JoinRecord to every group of its tree and makes the root's pre-forward
  // issue `joinable`'s Join vote. ValueError when this module belongs to
  // another root's tree.
  JoinRecord& enableJoin(join::Joinable& joinable);
  // Detaches the record and the joinable again (FSDPJoinable's destructor).
  void disableJoin();
  // The groups of this root's tree, pre-order (empty before the root is known).
  std::vector<FSDPParamGroup*> rootGroups();

  // ---- internal (the hooks in fsdp_hooks.cpp) ------------------------------------------
  std::optional<nn::TensorList> preForward(const nn::TensorList& inputs);
  std::optional<nn::TensorList> postForward(const nn::TensorList& outputs);
  // The forward hooks of one module of the group (Note [Group forward hooks]).
  std::optional<nn::TensorList> modulePreForward(nn::Module& m, const nn::TensorList& inputs);
  std::optional<nn::TensorList> modulePostForward(nn::Module& m, const nn::TensorList& outputs);
  void preBackward();
  void postBackward();

 private:
  void lazyInit();
  void finalBackwardCallback();
  void prefetchForward();
  void prefetchBackward();
  void resolvePostForwardGroup(std::map<int, comm::ProcessGroupPtr>& groups);
  void registerPreBackward(const nn::TensorList& outputs);
  void sampleGradientBytes();  // memory accounting of gradients (root tree)
  std::vector<FSDPModule*> tree(bool recurse);

  std::vector<nn::Module*> modules_;  // own this object through their hooks
  std::vector<nn::Module*> notYetForwarded_;  // group modules to run in this forward
  nn::TensorList earlierOutputs_;  // outputs of the group's modules run so far
  FullyShardOptions options_;
  std::unique_ptr<FSDPParamGroup> group_;
  std::shared_ptr<RootContext> ctx_;  // set at the root's first forward
  bool isRoot_ = false;
  bool isLastBackward_ = true;
  std::vector<std::weak_ptr<FSDPModule>> forwardPrefetch_, backwardPrefetch_;
  bool explicitForward_ = false, explicitBackward_ = false;
  MemoryStats emptyMemory_;
};

FSDPModulePtr fullyShard(const std::shared_ptr<nn::Module>& module,
                         FullyShardOptions options = {});
// One group over several modules (PyTorch: fully_shard([m1, m2])).
FSDPModulePtr fullyShard(const std::vector<std::shared_ptr<nn::Module>>& modules,
                         FullyShardOptions options = {});
// The FSDPModule of `module`, or null when it was not sharded.
FSDPModulePtr fsdpModuleOf(const nn::Module& module);
// register_fsdp_forward_method: `method` wrapped in the module's FSDP hooks; an
// unsharded module gets `method` back unchanged.
ForwardMethod registerFsdpForwardMethod(nn::Module& module, ForwardMethod method);

}  // namespace distlab::fsdp
