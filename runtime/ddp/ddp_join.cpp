// DistributedDataParallel as a join::Joinable.
//
// Note [DDP under Join]
// One iteration of a rank still training, inside an enabled Join, issues on
// the DDP process group (PyTorch DDP._pre_forward and the Reducer):
//   1. the Join vote: allreduce ones(1), async (Join::notifyJoinContext);
//      with throw_on_early_termination also allreduce zeros(1), waited;
//   2. the bucket rebuild, once (two broadcasts, Note [Initial buckets]);
//   3. with buffers to broadcast: allreduce MAX of the rank (the highest rank
//      still training is the buffers' source), then the coalesced broadcasts;
//   4. allreduce of 1 when this iteration synchronises gradients (0 under no_sync);
//   5. backward: one collective per bucket in bucket order (or whatever the
//      comm hook issues), then the used-map allreduce (find_unused_parameters).
// A joined rank's mainHook() issues the same sequence: Join's own count
// allreduce matches (1), rebuildBuckets() matches (2) — the joined rank's
// layout (pushAllRebuiltParams when it never ran a backward) loses to rank
// 0's broadcast unless it is rank 0 — then (3) with rank -1, (4) with 0, and,
// when the peers synchronise, zeroed buckets through the comm hook (their
// results, the peers' average, land in this rank's .grad for the Joinables
// after DDP, e.g. ZeroRedundancyOptimizer; PyTorch discards them) and the
// used map. The built-in path divides by the initial world size, or with
// divide_by_initial_world_size=false by the vote's sum (the ranks still
// training); joined ranks add zeros. postHook broadcasts parameters and
// buffers from the highest-ranked last joiner.
#include <fmt/format.h>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"
#include "runtime/ddp/distributed_data_parallel.hpp"

namespace distlab::ddp {

class DistributedDataParallel::JoinHookImpl : public join::JoinHook {
 public:
  explicit JoinHookImpl(DistributedDataParallel& ddp) : ddp_(ddp) {}

  void mainHook() override {
    if (ddp_.reducer_ && ddp_.reducer_->rebuildBuckets()) {
      DL_LOG(INFO, "Reducer buckets have been rebuilt in this iteration.");
    }
    if (ddp_.willSyncModuleBuffers()) ddp_.syncModuleBuffers(/*joined=*/true);
    comm::WorkPtr work = ddp_.checkGlobalRequiresBackwardGradSync(/*joined=*/true);
    work->wait(ddp_.group_->timeout());
    const bool shouldSync = work->result().front().to(Device::cpu()).item<float>() > 0;
    ddp_.requireForwardParamSync_ = shouldSync;
    if (!shouldSync || !ddp_.reducer_) return;
    ddp_.matchAllReduceForBackward();
    ddp_.reducer_->pushAllRebuiltParams();
  }

  void postHook(bool isLastJoiner) override { ddp_.syncFinalModel(isLastJoiner); }

 private:
  DistributedDataParallel& ddp_;
};

join::Join DistributedDataParallel::join(bool divideByInitialWorldSize, bool enable,
                                         bool throwOnEarlyTermination) {
  join::JoinOptions options;
  options.enable = enable;
  options.throwOnEarlyTermination = throwOnEarlyTermination;
  options.kwargs.flags["divide_by_initial_world_size"] = divideByInitialWorldSize;
  return join::Join({this}, std::move(options));
}

std::unique_ptr<join::JoinHook> DistributedDataParallel::joinHook(
    const join::JoinKwargs& kwargs) {
  if (!delayedParams_.empty()) {
    throw ValueError(
        "DistributedDataParallel::joinHook: delay_all_reduce_named_params is not supported "
        "under Join (the delayed all-reduce has no fixed place among the bucket collectives, "
        "so a joined rank cannot shadow it); remove the option to train with Join");
  }
  if (options_.staticGraph) {
    throw ValueError(
        "DistributedDataParallel::joinHook: static_graph is not supported under Join in "
        "distlab (a joined rank cannot tell which static-graph iteration its peers are in); "
        "construct DDP without static_graph to train with Join");
  }
  divideByInitialWorldSize_ = kwargs.flag("divide_by_initial_world_size", true);
  return std::make_unique<JoinHookImpl>(*this);
}

Device DistributedDataParallel::joinDevice() const {
  const auto params = module_->parameters();
  return params.empty() ? Device::cpu() : params.front().device();
}

void DistributedDataParallel::syncModuleBuffers(bool joined) {
  const int root = joinConfig().enable || joined ? findCommonRank(!joined) : 0;
  broadcastCoalesced(group_, module_->buffers(), kBroadcastBucketBytes, root);
}

comm::WorkPtr DistributedDataParallel::checkGlobalRequiresBackwardGradSync(bool joined) {
  const double value = !joined && requireBackwardGradSync_ ? 1.0 : 0.0;
  return group_->allreduce(full({1}, value, TensorOptions{DType::kFloat32, joinDevice()}));
}

int DistributedDataParallel::findCommonRank(bool candidate) {
  Tensor rank = full({1}, static_cast<int64_t>(candidate ? group_->rank() : -1),
                     TensorOptions{DType::kInt64, joinDevice()});
  comm::AllreduceOptions opts;
  opts.reduceOp = comm::ReduceOp::kMax;
  group_->allreduce(rank, opts)->wait(group_->timeout());
  const auto common = rank.to(Device::cpu()).item<int64_t>();
  if (common < 0) {
    throw Error(fmt::format(
        "DDP (rank {}, group '{}'): no rank is a candidate to be the authoritative copy under "
        "Join; expected at least one rank still training or one last joiner",
        group_->rank(), group_->name()));
  }
  return static_cast<int>(common);
}

void DistributedDataParallel::matchAllReduceForBackward() {
  std::vector<FuturePtr> futures;
  for (size_t b = 0; b < reducer_->numBuckets(); ++b) {
    futures.push_back(reducer_->runCommHookOnZeroBucket(b));
  }
  for (size_t b = 0; b < futures.size(); ++b) {
    const comm::Future::Value value = futures[b]->value(group_->timeout());
    if (value.size() != 1) {
      throw Error(fmt::format("DDP communication hook: the shadowed bucket {} returned {} "
                              "tensors, expected one", b, value.size()));
    }
    reducer_->writeShadowResult(b, value.front());
  }
  if (comm::WorkPtr used = reducer_->matchUsedMapAllreduce()) used->wait(group_->timeout());
}

void DistributedDataParallel::syncFinalModel(bool isLastJoiner) {
  const int root = findCommonRank(isLastJoiner);
  std::vector<Tensor> states = module_->parameters();
  if (options_.broadcastBuffers) {
    for (const Tensor& b : module_->buffers()) states.push_back(b);
  }
  autograd::NoGradGuard noGrad;
  broadcastCoalesced(group_, states, kBroadcastBucketBytes, root);
}

}  // namespace distlab::ddp
