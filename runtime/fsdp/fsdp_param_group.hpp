#pragma once
// FSDPParamGroup: the parameters of one fullyShard call and their collectives
// (PyTorch: FSDPParamGroup): one all-gather to unshard, one reduce-scatter of
// the gradients (plus an all-reduce across replicas for HSDP).
//
// Note [FSDP group collectives]
// All-gather: every parameter's padded shard is copied into one flat input
// (its column range [offset, offset + chunkNumel) of a row of `total` entries),
// all_gather_into_tensor fills a [world, total] output, and copy-out writes each
// rank's row piece into the parameter's block of the unsharded tensor.
// Reduce-scatter: each unsharded gradient is cut into its ranks' blocks and
// copied into the same [world, total] layout (padding stays zero), and
// reduce_scatter_tensor leaves this rank's [total] row, from which each sharded
// gradient is a view. Both are issued asynchronously on the group's process
// group (its progress thread runs them while this thread computes); unshard
// waits in waitForUnshard(), gradient reduction in finishReduction().
//
// Note [FSDP gradient division]
// With N = shard world x replicate world and no custom factor, fp32/bf16
// reduce with AVG (SUM when the shard world is 1) on the shard group and AVG
// across replicas. A custom factor F (setGradientDivideFactor) uses
// PREMUL_SUM(1/F) and SUM. float16 reductions, and any reduction with
// setForceSumReductionForComms, use SUM with a pre-division by p and a
// post-division by F/p (p doubles while F % p == 0 and F / p > p, about sqrt(F))
// so the partial sums stay in float16's range.
//
// Note [Resharding to a smaller world]
// reshardAfterForward = N (1 < N < shard world W, N | W; PyTorch's int) splits
// the shard group's ranks into consecutive groups of N (the post-forward
// group). Post-forward, instead of freeing the unsharded parameters outright,
// each rank first keeps its chunk of every unsharded parameter split over N
// ranks (the same torch.chunk spans and padding as the shard world's, in a
// flat [totalN] buffer of the unsharded dtype), so between forward and
// backward a rank holds about 1/N of the group's unsharded bytes instead of
// 1/W (true) or all of them (false). The backward unshard all-gathers that
// buffer within the post-forward group only (N ranks hold the whole
// parameter) and copies out with the N-way split; the buffer is dropped
// once copied out, on reshard(), or when the setting is changed. It counts
// as unsharded-parameter memory. Sharded parameters, gradients and the
// reduce-scatter stay on the shard world.
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "runtime/comm/comm_trace.hpp"
#include "runtime/comm/work.hpp"
#include "runtime/fsdp/fsdp_memory.hpp"
#include "runtime/fsdp/fsdp_options.hpp"
#include "runtime/fsdp/fsdp_param.hpp"

namespace distlab::fsdp {

// Collectives this group issued (tests count them).
struct CommCounts {
  int64_t allGathers = 0;
  int64_t postForwardAllGathers = 0;  // of allGathers: over the post-forward group
  int64_t reduceScatters = 0;
  int64_t allReduces = 0;
};

class FSDPParamGroup;

// One collective of an FSDP iteration, as recorded for Join (Note [FSDP under
// Join] in fsdp_join.hpp): which group issued it, what kind, and for a
// reduce-scatter which parameters had a gradient.
struct FsdpCollective {
  enum class Kind { kAllGather, kPostForwardAllGather, kReduceScatter, kReplicaAllReduce };
  FSDPParamGroup* group = nullptr;
  Kind kind = Kind::kAllGather;
  std::vector<size_t> reduced;  // kReduceScatter: indices into the group's params()
};

// What the groups of one root share under Join (fsdp_join.cpp): the record of
// the current iteration's collectives and the gradient scale of
// divide_by_initial_world_size = false.
class JoinRecord {
 public:
  // The root's pre-forward: starts a new record; `vote` is Join's allreduce of
  // the ranks still training (null outside an enabled Join), used only when
  // not dividing by the initial world size.
  void beginIteration(comm::WorkPtr vote);
  void record(FsdpCollective op) {
    if (recording_) current_.push_back(std::move(op));
  }
  // The collectives since the last beginIteration, in issue order.
  const std::vector<FsdpCollective>& current() const { return current_; }
  void setRecording(bool on) { recording_ = on; }
  // world / (ranks still training) when a vote is pending or was waited this
  // iteration, else 1; waits for the vote the first time (before the first
  // reduce-scatter). Multiplies the reduce-scatter input.
  double gradientScale();
  void setWorld(int world) { world_ = world; }
  void setDivideByInitialWorldSize(bool value) { divideByInitial_ = value; }

 private:
  std::vector<FsdpCollective> current_;
  comm::WorkPtr vote_;
  double scale_ = 1.0;
  int world_ = 1;
  bool divideByInitial_ = true;
  bool recording_ = true;
};

struct GroupSettings {
  bool reshardAfterForward = true;
  bool reshardAfterBackward = true;
  bool requiresGradientSync = true;
  bool requiresAllReduce = true;
  bool unshardInBackward = true;
  bool forceSumReduction = false;
  std::optional<double> gradientDivideFactor;
  std::function<void(Tensor&)> allReduceHook;
};

class FSDPParamGroup {
 public:
  ~FSDPParamGroup();  // waits (bounded) for collectives still in flight
  FSDPParamGroup(std::vector<std::unique_ptr<FSDPParam>> params, comm::DeviceMesh mesh,
                 MixedPrecisionPolicy mp, MemoryStats* memory);

  const std::vector<std::unique_ptr<FSDPParam>>& params() const { return params_; }
  GroupSettings& settings() { return settings_; }
  const CommCounts& counts() const { return counts_; }
  bool empty() const { return params_.empty(); }
  void setMemory(MemoryStats* memory) { memory_ = memory; }
  // The module whose trace label names this group's trace spans.
  void setTraceOwner(const nn::Module* owner) { traceOwner_ = owner; }

  // Issues the all-gather unless unsharded or already in flight.
  void unshard();
  // Waits for the in-flight all-gather (issuing it first if needed), copies
  // out, and points the owners at the unsharded parameters.
  void waitForUnshard();
  bool isUnsharded() const { return unsharded_; }
  bool unshardInFlight() const { return pendingGather_ != nullptr; }
  // Frees the unsharded parameters and points the owners at the shards.
  void reshard();
  // Post-forward: reshard() or, with a post-forward group, keep this rank's
  // chunk of the smaller split (Note [Resharding to a smaller world]).
  void reshardAfterForward();
  // The post-forward group (null: reshard to the shard world).
  void setPostForwardGroup(comm::ProcessGroupPtr group);
  bool hasPostForwardGroup() const { return postForward_.group != nullptr; }

  // After this group's gradients are accumulated: issues the reduce-scatter
  // (when gradient sync is on) and reshards when reshardAfterBackward. Once per
  // backward; later calls in the same backward do nothing.
  void postBackward();
  bool postBackwardDone() const { return postBackwardDone_; }
  // Waits for the reduction and writes (accumulates) the sharded gradients.
  void finishReduction();
  bool reductionPending() const { return pendingReduce_.has_value(); }
  void resetForNextBackward() { postBackwardDone_ = false; }
  // Unsharded gradients, pending reduction output and sharded gradients.
  size_t gradientBytes() const;
  // Under Join (null: off): the record this group's collectives go to.
  void setJoinRecord(JoinRecord* record) { join_ = record; }
  // Sets a zero unsharded gradient on `reduced` (a joined rank's shadowed
  // reduce-scatter contributes zeros; fsdp_join.cpp).
  void setZeroGradients(const std::vector<size_t>& reduced);

 private:
  int shardWorld() const { return static_cast<int>(mesh_.shape().back()); }
  comm::ProcessGroupPtr shardGroup() const { return mesh_.getGroup(std::optional<int>(mesh_.ndim() - 1)); }
  DType unshardedDtype() const;
  DType reduceDtype() const;
  TensorOptions bufferOptions(DType dtype) const;
  void issueReduceScatter();
  void scaleForJoin(Tensor& input);
  std::string_view traceName() const;
  // This group's rows and row bytes in `dtype` for the trace, while its
  // all-gather or reduce-scatter is issued (Note [Padded shards in the
  // trace]); carries nothing while tracing is off.
  comm::ShardLayoutScope traceShardLayout(DType dtype) const;

  // Where each parameter's chunk sits in a [world, total] all-gather buffer.
  struct Layout {
    comm::ProcessGroupPtr group;  // post-forward layout: its group; else unused
    int world = 1;
    int rank = 0;
    std::vector<int64_t> offsets;  // column of each param in a row
    int64_t total = 0;
  };
  void releaseGatherBuffers();

  std::vector<std::unique_ptr<FSDPParam>> params_;
  std::vector<int64_t> offsets_;  // column of each param in a [world, total] row
  int64_t total_ = 0;
  Layout postForward_;
  Tensor postForwardShard_;   // [postForward_.total] while post-forward resharded
  bool gatherFromPostForward_ = false;
  comm::DeviceMesh mesh_;
  MixedPrecisionPolicy mp_;
  MemoryStats* memory_;
  const nn::Module* traceOwner_ = nullptr;
  GroupSettings settings_;
  CommCounts counts_;
  JoinRecord* join_ = nullptr;

  bool unsharded_ = false;
  comm::WorkPtr pendingGather_;
  Tensor gatherInput_;
  Tensor gatherOutput_;

  bool postBackwardDone_ = false;
  struct PendingReduce {
    comm::WorkPtr scatter;
    Tensor input;                     // [world, total], kept until the work is done
    Tensor output;                    // [total] in the reduce dtype
    std::vector<size_t> reduced;      // indices of params with a gradient
    double postDivide = 1.0;
    bool sumMode = false;             // SUM across replicas (else AVG)
  };
  std::optional<PendingReduce> pendingReduce_;
};

}  // namespace distlab::fsdp
