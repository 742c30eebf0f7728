#pragma once
// An FSDP model as a join::Joinable: uneven inputs under fully_shard (PyTorch's
// Join covers DDP and ZeroRedundancyOptimizer only).
//
//   auto root = fsdp::fullyShard(model);
//   optim::SGD opt(model->parameters(), {});
//   fsdp::FSDPJoinable joinable(*root, &opt);
//   join::Join join({&joinable});         // kwargs: divide_by_initial_world_size
//   for (auto& b : myBatches) { ...forward, backward, opt.step(), opt.zeroGrad()... }
//   join.exit();                          // shadows until every rank joined
//
// Note [FSDP under Join]
// Every iteration of a rank still training starts, at the root's pre-forward,
// with Join's vote (Join::notifyJoinContext). Each group records, in issue
// order, the collectives it issues (FsdpCollective: forward/backward
// all-gathers over the shard world or the post-forward group, reduce-scatters,
// HSDP's replica all-reduce), so the record of a rank's last completed
// iteration is the schedule its peers keep issuing (prefetches included: a
// prefetch is recorded where it is issued). A joined rank's mainHook() replays
// that record through the same FSDPParamGroup code paths, so sizes, dtypes
// (mixed precision), groups and order are exactly the training ranks':
//   - an all-gather contributes this rank's REAL current shard (the peers
//     compute with the gathered parameters), a post-forward all-gather its
//     chunk of the parameters it just gathered;
//   - a reduce-scatter contributes zero gradients and leaves this rank's
//     reduced shard gradient (the peers' average) in the sharded `.grad`;
//   - the replica all-reduce runs where it ran (finishReduction).
// Then the optimizer given to FSDPJoinable steps this rank's shards, so after
// the last rank joined every rank's shards are the ones the training ranks
// computed, and no post-hook synchronisation is needed. Without an optimizer
// the reduced gradients stay in `.grad` for a later Joinable of the same Join
// (one that steps its own parameters, as distlab's ZeRO hook does) to step.
// divide_by_initial_world_size = true (default) keeps FSDP's division by the
// world; false multiplies each reduce-scatter input by world / (ranks still
// training), the vote's sum waited before the first reduce-scatter (joined
// ranks add zeros). A custom setGradientDivideFactor is applied as given.
//
// Misuse: a rank that joins without a completed iteration has nothing to
// replay (Error on that rank; its peers' all-gather then fails: naming it
// once its process ended, else at the group timeout). A
// schedule that differs across ranks (a forward that differs per rank, groups
// that differ) makes a shadowed collective differ in kind, size or dtype,
// which the backends report as a collective mismatch on every rank of it.
// Not supported: setIsLastBackward(false) across the join (a deferred
// reduction has no place in the record); gradient accumulation with several
// forwards per iteration (only the last forward's collectives are recorded).
#include <memory>
#include <vector>

#include "runtime/fsdp/fully_shard.hpp"
#include "runtime/join/join.hpp"
#include "runtime/optim/optimizer.hpp"

namespace distlab::fsdp {

class FSDPJoinable : public join::Joinable {
 public:
  // `root`: the root FSDPModule (fullyShard on the whole model); `optimizer`
  // (may be null): the optimizer of the sharded parameters, stepped after each
  // shadowed iteration. `group`: the join group; null means the shard group of
  // a 1-D mesh or the default group for HSDP. ValueError when the group's size
  // is not the mesh's or `root` is not a root. Both must outlive this object.
  FSDPJoinable(FSDPModule& root, optim::Optimizer* optimizer,
               comm::ProcessGroupPtr group = nullptr);
  // Detaches from the root: its forwards no longer vote or record.
  ~FSDPJoinable() override;
  FSDPJoinable(const FSDPJoinable&) = delete;
  FSDPJoinable& operator=(const FSDPJoinable&) = delete;

  void setOptimizer(optim::Optimizer* optimizer) { optimizer_ = optimizer; }
  std::unique_ptr<join::JoinHook> joinHook(const join::JoinKwargs& kwargs) override;
  Device joinDevice() const override;
  comm::ProcessGroupPtr joinProcessGroup() const override { return group_; }

 private:
  class Hook;
  FSDPModule& root_;
  optim::Optimizer* optimizer_;
  comm::ProcessGroupPtr group_;
  JoinRecord* record_;
};

}  // namespace distlab::fsdp
