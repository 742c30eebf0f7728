// hookWithZeroStep / hookWithZeroStepInterleaved (Note [ZeRO overlapped with
// DDP] in zero_ddp_hook.hpp).
#include "runtime/zero/zero_ddp_hook.hpp"

#include <memory>
#include <utility>

#include <fmt/format.h>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::zero {
namespace {

// One DDP bucket as ZeRO sees it once the buckets are rebuilt.
struct BucketLayout {
  std::vector<Tensor> params;
  std::vector<int64_t> offsets;  // of each parameter's gradient in the bucket buffer
  std::vector<int64_t> lengths;
  int owner = 0;
  Tensor flat;  // the parameters packed for the broadcast
};

class ZeroStepHook {
 public:
  ZeroStepHook(ddp::CommHookFn hook, ddp::DistributedDataParallel& ddp,
               ZeroRedundancyOptimizer& zero, bool interleaved)
      : hook_(std::move(hook)), ddp_(ddp), zero_(zero), interleaved_(interleaved) {}

  ddp::FuturePtr operator()(const ddp::HookState& state, ddp::GradBucket& bucket) {
    ddp::FuturePtr fut = hook_(state, bucket);
    if (!ddp_.reducer()->hasRebuiltBuckets()) return fut;  // warm-up: no update
    if (!zero_.overlapInitialized()) {
      record(bucket);  // the first backward after the rebuild: no update either
      if (bucket.isLast()) initialize();
      return fut;
    }
    const size_t i = bucket.index();
    if (i == 0) startIteration();
    checkOrder(bucket);
    futures_.push_back(fut);
    const size_t upTo = bucket.isLast() ? i + 1 : (interleaved_ ? i : 0);
    while (stepped_ < upTo) stepAndBroadcast(stepped_++);
    if (bucket.isLast()) finishIteration();
    return fut;
  }

 private:
  void record(const ddp::GradBucket& bucket) {
    if (bucket.index() == 0) layouts_.clear();
    DL_CHECK(bucket.index() == layouts_.size(), "hookWithZeroStep: bucket ", bucket.index(),
             " arrived, expected bucket ", layouts_.size(), " (buckets reduce in index order)");
    BucketLayout layout;
    layout.params = bucket.parameters();
    layout.offsets = bucket.offsets();
    layout.lengths = bucket.lengths();
    layouts_.push_back(std::move(layout));
  }

  void initialize() {
    std::vector<std::vector<Tensor>> bucketParams;
    for (const auto& layout : layouts_) bucketParams.push_back(layout.params);
    zero_.initOverlap(bucketParams);
    const int world = group().size();
    for (size_t b = 0; b < layouts_.size(); ++b) {
      auto& layout = layouts_[b];
      layout.owner = static_cast<int>(b % static_cast<size_t>(world));
      int64_t numel = 0;
      for (const Tensor& p : layout.params) numel += p.numel();
      const Tensor& first = layout.params.front();
      layout.flat = zeros({numel}, TensorOptions{first.dtype(), first.device()});
    }
  }

  void startIteration() {
    futures_.clear();  // left over only if an earlier backward failed
    broadcasts_.clear();
    stepped_ = 0;
  }

  void checkOrder(const ddp::GradBucket& bucket) const {
    if (bucket.index() != futures_.size() || bucket.index() >= layouts_.size() ||
        bucket.isLast() != (bucket.index() + 1 == layouts_.size())) {
      throw Error(fmt::format(
          "hookWithZeroStep: bucket {} arrived after {} bucket(s) of this backward, but ZeRO "
          "partitioned {} buckets in index order; DDP's buckets must not change after the "
          "rebuild",
          bucket.index(), futures_.size(), layouts_.size()));
    }
  }

  // The owner steps bucket b with its averaged gradients; every rank issues
  // the bucket's broadcast from the owner.
  void stepAndBroadcast(size_t b) {
    autograd::NoGradGuard noGrad;
    auto& layout = layouts_[b];
    if (layout.owner == group().rank()) {
      const Tensor reduced = futures_[b]->value(group().timeout()).at(0);
      std::vector<Tensor> grads;
      for (size_t k = 0; k < layout.params.size(); ++k) {
        const Tensor& p = layout.params[k];
        grads.push_back(
            reduced.narrow(0, layout.offsets[k], layout.lengths[k]).view(p.sizes()).to(p.dtype()));
      }
      zero_.stepOwned(layout.params, grads);
      forEachSlice(layout, [](Tensor& p, Tensor slice) { slice.copy_(p); });
    }
    comm::BroadcastOptions options;
    options.rootRank = layout.owner;
    broadcasts_.push_back(group().broadcast(layout.flat, options));
  }

  void finishIteration() {
    autograd::NoGradGuard noGrad;
    for (auto& work : broadcasts_) work->wait(group().timeout());
    for (auto& layout : layouts_) {
      if (layout.owner == group().rank()) continue;
      forEachSlice(layout, [](Tensor& p, Tensor slice) { p.copy_(slice); });
    }
    startIteration();
  }

  template <typename Fn>
  static void forEachSlice(BucketLayout& layout, Fn&& fn) {
    int64_t offset = 0;
    for (Tensor& p : layout.params) {
      fn(p, layout.flat.narrow(0, offset, p.numel()).view(p.sizes()));
      offset += p.numel();
    }
  }

  comm::ProcessGroup& group() const { return *zero_.joinProcessGroup(); }

  ddp::CommHookFn hook_;
  ddp::DistributedDataParallel& ddp_;
  ZeroRedundancyOptimizer& zero_;
  bool interleaved_;
  std::vector<BucketLayout> layouts_;
  std::vector<ddp::FuturePtr> futures_;      // this backward's, by bucket
  std::vector<comm::WorkPtr> broadcasts_;    // this backward's
  size_t stepped_ = 0;                       // buckets stepped in this backward
};

void checkDdp(const ddp::DistributedDataParallel& ddp, const ZeroRedundancyOptimizer& zero) {
  if (!ddp.reducer()) {
    throw ValueError(
        "zero::hookWithZeroStep: ddp has no buckets (every parameter's all-reduce is delayed by "
        "delay_all_reduce_named_params), so there is nothing to step per bucket");
  }
  if (ddp.options().findUnusedParameters && !ddp.options().staticGraph) {
    throw ValueError(
        "zero::hookWithZeroStep: ddp was built with find_unused_parameters = true and no "
        "static_graph, so it never rebuilds its buckets and ZeRO would never start stepping; "
        "use find_unused_parameters = false or static_graph = true");
  }
  const auto& a = ddp.processGroup();
  const auto& b = zero.joinProcessGroup();
  if (a->size() != b->size() || a->rank() != b->rank()) {
    throw ValueError(fmt::format(
        "zero::hookWithZeroStep: ddp's process group (rank {} of {}) is not the "
        "ZeroRedundancyOptimizer's (rank {} of {}); build both over the same group",
        a->rank(), a->size(), b->rank(), b->size()));
  }
}

ddp::CommHookFn makeHook(ddp::CommHookFn hook, ddp::DistributedDataParallel& ddp,
                         ZeroRedundancyOptimizer& zero, bool interleaved) {
  if (!hook) {
    throw ValueError(
        "zero::hookWithZeroStep: hook is empty; pass the hook that averages a bucket, e.g. "
        "ddp::allreduceHook");
  }
  checkDdp(ddp, zero);
  std::vector<Tensor> trainable;
  for (const Tensor& p : ddp.module().parameters()) {
    if (p.requiresGrad()) trainable.push_back(p);
  }
  zero.attachOverlapHook(trainable);
  auto impl = std::make_shared<ZeroStepHook>(std::move(hook), ddp, zero, interleaved);
  return [impl](const ddp::HookState& state, ddp::GradBucket& bucket) {
    return (*impl)(state, bucket);
  };
}

}  // namespace

ddp::CommHookFn hookWithZeroStep(ddp::CommHookFn hook, ddp::DistributedDataParallel& ddp,
                                 ZeroRedundancyOptimizer& zero) {
  return makeHook(std::move(hook), ddp, zero, false);
}

ddp::CommHookFn hookWithZeroStepInterleaved(ddp::CommHookFn hook,
                                            ddp::DistributedDataParallel& ddp,
                                            ZeroRedundancyOptimizer& zero) {
  return makeHook(std::move(hook), ddp, zero, true);
}

}  // namespace distlab::zero
