#pragma once
// ZeroRedundancyOptimizer (PyTorch: torch.distributed.optim.ZeroRedundancyOptimizer):
// optimizer state sharded over a process group (ZeRO stage 1).
//
//   zero::ZeroRedundancyOptimizer opt(model->parameters(), optim::optimizerFactory("adam"),
//                                     group, {}, {{"lr", 0.01}});
//   ... backward (DDP averages the gradients) ...; opt.step();
//
// Partition (Note [ZeRO partition]): whole parameters, never split. For each
// parameter group in turn, its parameters sorted by size (largest first, ties
// by position) go one by one to the rank with the smallest total so far (ties:
// the lowest rank). Sizes accumulate across groups, and adding a group never
// moves an earlier parameter. Each rank's local optimizer (built by the
// factory) holds only its own parameters, so it keeps about 1/world of the
// optimizer state.
//
// step(): notifies an enclosing Join (join.hpp), runs the local optimizer on
// the own partition, then every rank's updated parameters are broadcast from
// their owner: one broadcast per parameter, or, with parametersAsBucketView,
// one broadcast per rank of a flat buffer holding that rank's parameters
// (Note [ZeRO buckets]). Every rank must call step() (and addParamGroup,
// consolidateStateDict) in the same order: they are collectives.
//
// State: stateDict() returns the global state gathered by
// consolidateStateDict(to) on rank `to` (state keyed by the parameter's
// position across all groups, as in PyTorch); loadStateDict() takes such a
// dictionary on every rank and keeps this rank's part.
//
// Join: a Joinable whose hook runs step() for a joined rank (gradients must be
// set first: DDP's hook, listed before it, leaves the shadowed average in
// .grad). Not with overlapWithDdp (ValueError from joinHook()).
//
// overlapWithDdp (Note [ZeRO overlapped with DDP], zero_ddp_hook.hpp): the
// optimizer is driven by a DDP comm hook made by zero::hookWithZeroStep. The
// partition is by DDP *bucket* (bucket i belongs to rank i % world) and is made
// only once DDP has rebuilt its buckets, so, as in PyTorch, the first two
// iterations (three with static_graph) do NOT update the parameters; after
// that the hook steps each bucket on its owner once its allreduce completed and
// broadcasts it from there, and step() does nothing but the bookkeeping (the
// Join vote; a RuntimeError when no hook was made for this optimizer).
// Exactly one parameter group (ValueError otherwise, also from
// addParamGroup); parametersAsBucketView is ignored with a warning (PyTorch).
// consolidateStateDict/stateDict/loadStateDict raise until the partition is
// made (PyTorch's "fully initialized" error).
//
// Blocking: each collective waits at most the group's timeout. Not
// thread-safe; one instance per rank, used from the training thread.
#include <memory>
#include <optional>
#include <vector>

#include "runtime/comm/process_group.hpp"
#include "runtime/join/join.hpp"
#include "runtime/optim/optimizer.hpp"
#include "runtime/optim/optimizer_factory.hpp"

namespace distlab::zero {

struct ZeroOptions {
  bool parametersAsBucketView = false;
  bool overlapWithDdp = false;
};

class ZeroRedundancyOptimizer : public join::Joinable {
 public:
  // ValueError naming the argument for: no parameters, a parameter listed
  // twice, parameters on different devices or of different dtypes, a null or
  // foreign group, an option the optimizer kind lacks, overlapWithDdp with
  // more than one parameter group.
  ZeroRedundancyOptimizer(std::vector<Tensor> params, optim::OptimizerFactory factory,
                          comm::ProcessGroupPtr group, ZeroOptions options = {},
                          optim::Options defaults = {});
  ZeroRedundancyOptimizer(std::vector<optim::ParamGroup> groups, optim::OptimizerFactory factory,
                          comm::ProcessGroupPtr group, ZeroOptions options = {},
                          optim::Options defaults = {});
  ~ZeroRedundancyOptimizer() override;
  ZeroRedundancyOptimizer(const ZeroRedundancyOptimizer&) = delete;
  ZeroRedundancyOptimizer& operator=(const ZeroRedundancyOptimizer&) = delete;

  void step();
  void zeroGrad(bool setToNone = true);
  // A collective: every rank adds the same group. Options changed in
  // paramGroups() reach the local optimizer at the next step().
  void addParamGroup(optim::ParamGroup group);
  std::vector<optim::ParamGroup>& paramGroups() { return groups_; }

  void consolidateStateDict(int to = 0);
  // Error when this rank holds no consolidated state.
  optim::OptimizerStateDict stateDict() const;
  // ValueError when the group count or a group's size differs.
  void loadStateDict(const optim::OptimizerStateDict& stateDict);

  // ---- introspection ------------------------------------------------------------------
  // Global parameter positions owned by each rank (overlapWithDdp: empty, and
  // ownerOf throws std::out_of_range, until the bucket partition is made).
  const std::vector<std::vector<size_t>>& partition() const { return partition_; }
  int ownerOf(size_t position) const { return owner_.at(position); }
  // Elements of optimizer state held here (every buffer of every local parameter).
  int64_t localStateNumel() const;
  optim::Optimizer* localOptimizer() { return local_.get(); }

  // ---- overlapWithDdp: called by hookWithZeroStep (zero_ddp_hook.hpp) ------------------
  bool overlapWithDdp() const { return options_.overlapWithDdp; }
  // True once the bucket partition is made (PyTorch: _OverlapStatus.INITIALIZED).
  bool overlapInitialized() const { return overlapInitialized_; }
  // The hook records that it exists; ValueError unless overlapWithDdp, when a
  // hook was already made for this optimizer, or when `ddpParams` (the DDP
  // model's parameters) are not exactly this optimizer's parameters.
  void attachOverlapHook(const std::vector<Tensor>& ddpParams);
  // Partitions by bucket (bucket i to rank i % world) and builds the local
  // optimizer over this rank's buckets. Error when a parameter is in no bucket,
  // in two, or is not one of this optimizer's.
  void initOverlap(const std::vector<std::vector<Tensor>>& bucketParams);
  // The local optimizer steps `params` (all owned here) with `grads` (same
  // shapes) as their gradients; the other local parameters are left alone.
  // Their .grad fields are restored afterwards.
  void stepOwned(const std::vector<Tensor>& params, const std::vector<Tensor>& grads);

  // ---- Joinable -------------------------------------------------------------------------
  std::unique_ptr<join::JoinHook> joinHook(const join::JoinKwargs& kwargs) override;
  Device joinDevice() const override { return params_.front().device(); }
  comm::ProcessGroupPtr joinProcessGroup() const override { return group_; }

 private:
  void validateParams(const std::vector<Tensor>& params) const;
  void probeOptions(const optim::Options& options) const;
  void partitionGroup(size_t groupIndex);
  void addLocalGroup(size_t groupIndex);
  void syncLocalOptions();
  void broadcastParameters();
  void broadcastBuckets();
  optim::OptimizerStateDict localStateDictFrom(const optim::OptimizerStateDict& global) const;
  // Global positions of the local optimizer's parameters, in its order.
  std::vector<size_t> localPositions() const;
  optim::Options localOptionsOr(const optim::Options& options) const;
  size_t positionOf(const Tensor& param, const char* what) const;
  void checkOverlapInitialized(const char* method) const;
  void checkOverlapHook() const;
  static void checkOverlapOptions(const std::vector<optim::ParamGroup>& groups,
                                  const ZeroOptions& options);

  comm::ProcessGroupPtr group_;
  optim::OptimizerFactory factory_;
  ZeroOptions options_;
  optim::Options defaults_;
  std::vector<optim::ParamGroup> groups_;
  std::vector<Tensor> params_;                 // by global position
  std::vector<int> owner_;                     // global position -> rank
  std::vector<std::vector<size_t>> partition_; // rank -> global positions
  std::vector<int64_t> rankNumel_;
  std::unique_ptr<optim::Optimizer> local_;
  std::vector<int> localGroupOf_;              // global group -> local group or -1
  std::vector<Tensor> buckets_;                // per rank (parametersAsBucketView)
  std::optional<optim::OptimizerStateDict> consolidated_;
  bool overlapHookAttached_ = false;
  bool overlapInitialized_ = false;
};

}  // namespace distlab::zero
