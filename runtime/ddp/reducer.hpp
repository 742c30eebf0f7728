#pragma once
// Reducer: the gradient-synchronisation engine of DistributedDataParallel
// (PyTorch: c10d::Reducer). Internal to runtime/ddp but public so that Join,
// ZeroRedundancyOptimizer and the benchmarks can read its layout and timings.
//
// Note [Reducer lifecycle]
// Per synchronising iteration, on the thread that runs forward and backward:
//   prepareForForward()      count the iteration, stamp the forward start
//   rebuildBuckets()         raise if the prior reduction did not finish; rebuild
//                            the buckets once (second forward), layout from rank 0
//   prepareForBackward(outs) arm the hooks; with find_unused_parameters walk the
//                            graph from `outs` and remember unreachable parameters
//   backward: the first hook counts the backward pass (Note [Counting backward
//   passes]); each parameter's post-accumulate-grad hook marks it ready; the
//   first hook also marks the unused parameters ready; a bucket whose
//   parameters are all ready is launched (Note [Launch order]); when the last
//   bucket launched, the local-used map is allreduced (find_unused_parameters;
//   with a comm hook once every bucket's Future completed: Note [Used map
//   after hook collectives]) and finalizeBackward() is queued to run when the
//   engine finishes:
//   finalizeBackward()       wait for every bucket's Future (group timeout),
//                            copy results into .grad (or keep .grad a view of
//                            the bucket with gradient_as_bucket_view)
// Outside a synchronising iteration (no_sync) hooks only record which
// parameters were used; gradients accumulate in .grad.
//
// Note [Launch order]
// Buckets are launched strictly in bucket-index order, whatever order they
// become ready in: a ready bucket waits until every lower-index bucket was
// launched. So every rank issues the same collectives in the same order.
// Without a comm hook the gradients are multiplied by 1/world_size while they
// are copied into the bucket and the bucket is allreduced with SUM; a comm hook
// receives the undivided sum-to-be and owns the division.
//
// Note [Initial buckets]
// As in PyTorch, the first iteration uses ONE bucket (all parameters) unless
// find_unused_parameters is set without static_graph: parameter order need not
// match gradient order, and a mismatch could pair DDP's allreduce with another
// collective on a peer. After the first synchronising backward the buckets are
// rebuilt once from the order gradients actually arrived, with limits
// {first bucket cap, bucket cap}; rank 0's layout is broadcast (two int64
// broadcasts). With static_graph the order is recorded in the second iteration
// and the rebuild happens at the third forward.
//
// Thread-safety: every method except the Future-completion stamps runs on the
// thread running forward/backward. Not copyable or movable (hooks capture it).
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/autograd/hooks.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/ddp/bucket_assignment.hpp"
#include "runtime/ddp/ddp_stats.hpp"
#include "runtime/ddp/grad_bucket.hpp"

namespace distlab::ddp {

struct ReducerOptions {
  int64_t bucketBytesCap = kDefaultBucketBytesCap;
  int64_t firstBucketBytesCap = kDefaultFirstBucketBytes;
  bool findUnusedParameters = false;
  bool gradientAsBucketView = false;
  bool staticGraph = false;
  bool skipAllReduceUnusedParams = false;
  // DDP_SET_LAST_BUCKET_CAP (DistributedDataParallel fills it from its read of
  // the environment): the rebuild gives the small first-bucket cap to the last
  // bucket instead.
  bool setLastBucketCap = false;
};

// One bucket's layout (for Join shadowing, ZeRO overlap, logging).
struct BucketInfo {
  size_t index = 0;
  std::vector<size_t> variableIndices;
  int64_t numel = 0;
  DType dtype = DType::kFloat32;
  int64_t sizeLimit = 0;
  int64_t bytes() const { return numel * static_cast<int64_t>(elementSize(dtype)); }
};

class Reducer {
 public:
  // `names`: FQN per parameter (messages). `bucketIndices`: the initial layout,
  // in launch order. Registers one post-accumulate-grad hook per parameter.
  Reducer(std::vector<Tensor> params, std::vector<std::string> names,
          std::vector<std::vector<size_t>> bucketIndices, std::vector<int64_t> sizeLimits,
          comm::ProcessGroupPtr group, ReducerOptions options);
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // ---- per iteration (Note [Reducer lifecycle]) ------------------------------------
  void prepareForForward();
  // Returns true when the buckets were rebuilt now.
  bool rebuildBuckets();
  // Throws Error "Expected to have finished reduction in the prior iteration ..."
  // when a synchronising backward left parameters unmarked.
  void ensurePriorReductionFinished() const;
  void prepareForBackward(const std::vector<Tensor>& outputs);

  // ---- configuration ----------------------------------------------------------------
  // Once, before the first backward (DistributedDataParallel checks both).
  void registerCommHook(HookState state, CommHookFn hook, std::string name);
  bool hasCommHook() const { return static_cast<bool>(hook_); }
  const std::string& commHookName() const { return hookName_; }
  // The divisor of the built-in path (default: world size). Join uses it.
  void setDivFactor(std::optional<int64_t> factor) { divFactorOverride_ = factor; }
  // Join (Note [DDP under Join]): `vote` is this iteration's notifyJoinContext
  // allreduce (its sum = the ranks still training). Unless `useStaticWorldSize`,
  // the built-in path divides this iteration's gradients by that sum (waited
  // for when the first gradient is copied into a bucket). A comm hook owns
  // its division and is unaffected. Call after prepareForForward().
  void setForwardPassWorkHandle(comm::WorkPtr vote, bool useStaticWorldSize);
  // Join, on a joined rank: runs the registered comm hook (or the built-in
  // allreduce, undivided) on a zero-filled copy of bucket `bucketIndex`,
  // matching that bucket's collective on the ranks still training.
  FuturePtr runCommHookOnZeroBucket(size_t bucketIndex);
  // Join, on a joined rank: writes the result of that shadowed bucket (the
  // peers' averaged gradient) into the parameters' .grad, so a Joinable after
  // DDP (ZeroRedundancyOptimizer) steps with the gradient the peers use.
  void writeShadowResult(size_t bucketIndex, const Tensor& result);
  // Join, on a joined rank: the used-map allreduce of a find_unused_parameters
  // iteration (this rank's map, all zeros when nothing was accumulated); null
  // when such an iteration issues none. Issue after every bucket's Future completed.
  comm::WorkPtr matchUsedMapAllreduce();
  // Join: a joined rank shadowing an iteration records every parameter as
  // ready (in index order) so its rebuild matches the peers' (PyTorch
  // _push_all_rebuilt_params). No-op once buckets were rebuilt.
  void pushAllRebuiltParams();
  // static_graph turned on after construction (PyTorch _set_static_graph);
  // only before the first iteration.
  void setStaticGraph();

  // ---- state for Join / ZeRO / logging -----------------------------------------------
  const std::vector<Tensor>& parameters() const { return params_; }
  const std::vector<std::string>& parameterNames() const { return names_; }
  std::vector<BucketInfo> bucketInfos() const;
  size_t numBuckets() const { return buckets_.size(); }
  bool hasRebuiltBuckets() const { return hasRebuiltBuckets_; }
  int64_t numIterations() const { return numIterations_; }
  // Parameters found unused in the last synchronising iteration.
  const std::vector<size_t>& unusedParameters() const { return unusedParameters_; }
  // True while every iteration so far saw the same per-parameter hook counts
  // (logged as can_set_static_graph).
  bool graphStaticSoFar() const { return graphStatic_; }
  IterationTiming lastIteration() const { return timing_; }
  std::vector<BucketTiming> lastBucketTimings() const;
  const ReducerOptions& options() const { return options_; }
  const comm::ProcessGroupPtr& processGroup() const { return group_; }

 private:
  struct Bucket;
  void initializeBuckets(std::vector<std::vector<size_t>> bucketIndices,
                         std::vector<int64_t> sizeLimits);
  std::vector<std::vector<size_t>> syncBucketIndices(std::vector<std::vector<size_t>> indices);
  void autogradHook(size_t index);
  void markVariableReady(size_t index);
  void copyGradIntoBucket(size_t index, Bucket& bucket, size_t slot);
  void checkGradLayout(size_t index, const Tensor& grad, const Tensor& view) const;
  void markBucketReady(size_t bucketIndex);
  void launchBucket(Bucket& bucket);
  void delayAllReduce();
  void finalizeBackward();
  void waitForBucket(Bucket& bucket);
  void finalizeBucket(Bucket& bucket);
  bool globallyUnused(size_t index);
  void allreduceLocalUsedMap();
  void allreduceLocalUsedMapAfterHooks();
  // A copy of localUsedMap_ for a collective: on the host when the group has a
  // CPU route, else on the parameters' device (nccl alone has no CPU route).
  Tensor usedMapForComm() const;
  void searchUnusedParameters(const std::vector<Tensor>& outputs);
  void resetBucketCounting();
  std::vector<size_t> unmarkedParamIndices() const;
  void checkMarkedTwice(size_t index) const;
  int64_t divFactor() const;
  bool dynamicFindUnused() const { return options_.findUnusedParameters && !options_.staticGraph; }
  bool staticFirstIteration() const { return options_.staticGraph && numBwdCalls_ == 1; }
  bool staticAfterFirstIteration() const { return options_.staticGraph && numBwdCalls_ > 1; }
  // Before a backward's first hook: has a (synchronising) backward already run?
  bool staticGraphRecorded() const { return options_.staticGraph && numBwdCalls_ >= 1; }
  bool shouldRebuildBuckets() const {
    return (options_.staticGraph || !options_.findUnusedParameters) && !hasRebuiltBuckets_;
  }

  std::vector<Tensor> params_;
  std::vector<std::string> names_;
  comm::ProcessGroupPtr group_;
  ReducerOptions options_;
  std::vector<autograd::RemovableHandle> hookHandles_;

  std::vector<std::unique_ptr<Bucket>> buckets_;
  struct Locator {
    size_t bucket = 0;
    size_t slot = 0;
  };
  std::vector<Locator> locators_;
  size_t nextBucket_ = 0;

  // Per-iteration accounting.
  bool expectAutogradHooks_ = false;
  bool requireFinalize_ = false;
  bool firstHookCalled_ = false;  // Note [Counting backward passes]
  bool hasMarkedUnused_ = false;
  bool finalizeQueued_ = false;
  std::vector<uint8_t> readyThisIteration_;
  std::vector<size_t> unusedParameters_;
  std::vector<uint8_t> locallyUnusedThisIteration_;  // marked by the unused search
  Tensor localUsedMap_;      // int32 [numParams] on the host, 1 = used since the last sync
  Tensor localUsedMapSync_;  // what was allreduced (usedMapForComm)
  comm::WorkPtr localUsedWork_;
  bool localUsedMapReduced_ = false;
  FuturePtr usedMapIssued_;                    // Note [Used map after hook collectives]
  std::shared_ptr<comm::WorkPtr> usedMapWork_; // set by the callback that completes it
  int64_t numIterations_ = 0;
  int64_t numBwdCalls_ = 0;
  std::optional<int64_t> divFactorOverride_;
  comm::WorkPtr forwardVote_;                 // Join's vote of this iteration
  mutable std::optional<int64_t> voteFactor_; // its sum, once read

  // Static graph and can_set_static_graph.
  std::vector<int64_t> hookCounts_;              // PyTorch numGradHooksTriggeredMap_
  std::vector<int64_t> hookCountsThisIteration_; // ... PerIteration_
  std::vector<int64_t> observedCounts_;          // this iteration (graph-static check)
  bool graphStatic_ = true;
  bool warnedNoUnused_ = false;

  // Rebuild.
  bool hasRebuiltBuckets_ = false;
  std::vector<size_t> rebuiltParamIndices_;

  // Comm hook.
  HookState hookState_;
  CommHookFn hook_;
  std::string hookName_;

  IterationTiming timing_;
};

}  // namespace distlab::ddp
