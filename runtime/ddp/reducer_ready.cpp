// Marking gradients ready and launching buckets (Note [Launch order]).
#include <fmt/format.h>

#include "runtime/autograd/engine.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/trace.hpp"
#include "runtime/ddp/reducer_internal.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"

namespace distlab::ddp {

void Reducer::autogradHook(size_t index) {
  // Note [Counting backward passes]: as in PyTorch, a backward pass is counted
  // at its first hook, not when forward armed the hooks. A grad-enabled forward
  // that is never followed by backward (evaluation without no_grad) must not
  // count, or static_graph would take the first real backward for its second.
  // Only synchronising backwards count (a no_sync micro-step fires hooks too).
  if (expectAutogradHooks_ && !firstHookCalled_) {
    firstHookCalled_ = true;
    ++numBwdCalls_;
  }
  // Used-ness is recorded even outside a synchronising iteration (no_sync), so
  // a parameter used in any accumulated micro-step counts as used.
  if (dynamicFindUnused() || staticFirstIteration()) {
    if (params_[index].grad().defined()) localUsedMap_.data<int32_t>()[index] = 1;
  }
  if (!expectAutogradHooks_) return;
  if (staticFirstIteration()) {
    // Note [Initial buckets]: the first static-graph iteration only counts hooks
    // and reduces everything at once when backward ends.
    ++hookCounts_[index];
    if (!finalizeQueued_) {
      finalizeQueued_ = true;
      autograd::queueCallback([this] { delayAllReduce(); });
    }
    return;
  }
  ++observedCounts_[index];
  if (!hasMarkedUnused_) {
    hasMarkedUnused_ = true;
    for (size_t unused : unusedParameters_) markVariableReady(unused);
  }
  if (staticAfterFirstIteration()) {
    if (hookCountsThisIteration_[index] <= 0) {
      throw Error(fmt::format(
          "Your training graph has changed in this iteration, e.g., one parameter is unused in "
          "first iteration, but then got used in the second iteration. this is not compatible "
          "with static_graph set to True. (parameter index {}, name {})",
          index, names_[index]));
    }
    if (--hookCountsThisIteration_[index] > 0) return;
  }
  if (shouldRebuildBuckets()) rebuiltParamIndices_.push_back(index);
  markVariableReady(index);
}

void Reducer::markVariableReady(size_t index) {
  checkMarkedTwice(index);
  readyThisIteration_[index] = 1;
  requireFinalize_ = true;
  const Locator loc = locators_[index];
  Bucket& bucket = *buckets_[loc.bucket];
  copyGradIntoBucket(index, bucket, loc.slot);
  if (trace::enabled()) {
    trace::instant(trace::Category::kDdp, fmt::format("grad ready {}", index),
                   fmt::format("\"param\":{},\"bucket\":{}", index, loc.bucket));
  }
  if (--bucket.pending == 0) {
    bucket.readyNs = monotonicNowNs();
    if (trace::enabled()) {
      trace::instant(trace::Category::kDdp, fmt::format("bucket {} ready", loc.bucket),
                     fmt::format("\"bucket\":{}", loc.bucket), bucket.readyNs);
    }
    markBucketReady(loc.bucket);
  }
  if (nextBucket_ == buckets_.size() && !finalizeQueued_) {
    // The used map is allreduced with skip_all_reduce_unused_params too: a
    // parameter unused here but used on a peer still receives the peers'
    // averaged gradient from a bucket that was reduced (PyTorch does the same).
    if (dynamicFindUnused()) {
      if (hook_) {
        allreduceLocalUsedMapAfterHooks();  // Note [Used map after hook collectives]
      } else {
        allreduceLocalUsedMap();
      }
    }
    finalizeQueued_ = true;
    autograd::queueCallback([this] {
      timing_.backwardComputeEndNs = monotonicNowNs();
      if (staticAfterFirstIteration() && shouldRebuildBuckets()) {
        for (size_t unused : unusedParameters_) rebuiltParamIndices_.push_back(unused);
      }
      finalizeBackward();
    });
  }
}

void Reducer::copyGradIntoBucket(size_t index, Bucket& bucket, size_t slot) {
  Tensor& view = bucket.viewsIn[slot];
  Tensor& param = params_[index];
  const Tensor grad = param.grad();
  if (!grad.defined()) {
    if ((dynamicFindUnused() || staticFirstIteration()) &&
        localUsedMap_.data<int32_t>()[index] != 0) {
      throw Error(
          "Encountered gradient which is undefined, but still allreduced by DDP reducer. This "
          "indicates a bug in DDP implementation, please report a bug with a repro to PyTorch.");
    }
    view.zero_();
    return;
  }
  checkGradLayout(index, grad, view);
  if (detail::sameMemory(grad, view)) {
    // gradient_as_bucket_view: .grad already is the bucket slot.
    if (!hook_) view.div_(static_cast<double>(divFactor()));
    return;
  }
  if (!hook_) {
    detail::copyScaled(view, grad, 1.0 / static_cast<double>(divFactor()));
  } else {
    view.copy_(grad);
  }
  if (options_.gradientAsBucketView) param.setGrad(view);
}

void Reducer::checkGradLayout(size_t index, const Tensor& grad, const Tensor& view) const {
  // PyTorch's check_grad_layout: the dtype first, with its message verbatim.
  if (grad.dtype() != view.dtype()) {
    throw Error(fmt::format("Expected {}, got {}\n(DDP: the gradient of parameter {} ({}))",
                            distlab::detail::dtypeTitle(view.dtype()),
                            distlab::detail::dtypeTitle(grad.dtype()), index, names_[index]));
  }
  // Then the size, 0-d gradients included (a 0-d gradient would otherwise be
  // broadcast into the bucket): PyTorch asserts grad.numel() == bucket_view.numel().
  if (grad.numel() != view.numel()) {
    throw Error(fmt::format(
        "grad.numel() == bucket_view.numel() INTERNAL ASSERT FAILED: DDP: the gradient of "
        "parameter {} ({}) has shape {} ({} elements), the parameter has shape {} ({} elements)",
        index, names_[index], shapeToString(grad.sizes()), grad.numel(),
        shapeToString(view.sizes()), view.numel()));
  }
  if (grad.sizes() != view.sizes() && view.numel() != 1) {
    throw Error(fmt::format("DDP: gradient of parameter {} ({}) has shape {}, expected {}", index,
                            names_[index], shapeToString(grad.sizes()),
                            shapeToString(view.sizes())));
  }
}

void Reducer::markBucketReady(size_t bucketIndex) {
  if (bucketIndex > nextBucket_) return;  // an earlier bucket is still pending
  for (; nextBucket_ < buckets_.size() && buckets_[nextBucket_]->pending == 0; ++nextBucket_) {
    if (timing_.backwardCommStartNs == 0) timing_.backwardCommStartNs = monotonicNowNs();
    launchBucket(*buckets_[nextBucket_]);
  }
}

void Reducer::launchBucket(Bucket& bucket) {
  trace::Span span(trace::Category::kDdp, "launch bucket ",
                   trace::enabled() ? std::to_string(bucket.index) : std::string());
  if (trace::enabled()) {
    span.setArgs(fmt::format("\"bucket\":{},\"bytes\":{}", bucket.index,
                             bucket.gradients.nbytes()));
  }
  bucket.launchedNs = monotonicNowNs();
  // A fresh stamp per launch: the previous iteration's stamping callback can
  // still run after its wait returned (Note [Work completion order]: waiters
  // wake before the Future's callbacks) and must not stamp this iteration.
  bucket.completedNs = std::make_shared<std::atomic<int64_t>>(0);
  bool allUnused = options_.skipAllReduceUnusedParams;
  for (size_t v : bucket.variableIndices) allUnused = allUnused && locallyUnusedThisIteration_[v];
  bucket.communicated = !allUnused;
  if (allUnused) {
    // skip_all_reduce_unused_params: the user promises the same parameters are
    // unused on every rank, so every rank skips the same buckets.
    bucket.future = comm::Future::completed({bucket.gradients});
  } else if (!hook_) {
    bucket.future = group_->allreduce(bucket.gradients)->getFuture();
  } else {
    std::vector<Tensor> params;
    for (size_t v : bucket.variableIndices) params.push_back(params_[v]);
    GradBucket gradBucket(bucket.index, buckets_.size(), bucket.gradients, bucket.offsets,
                          bucket.lengths, bucket.sizes, std::move(params), group_);
    bucket.future = hook_(hookState_, gradBucket);
    if (!bucket.future) {
      throw Error(fmt::format("DDP communication hook '{}' returned no Future for bucket {}",
                              hookName_, bucket.index));
    }
  }
  auto stamp = bucket.completedNs;
  bucket.future->addCallback([stamp, index = bucket.index](comm::Future&) {
    // The first stamp wins: a waiter woken before this callback ran
    // (waitForBucket) has stamped already, and a later time would put the
    // bucket's completion after the backward's end.
    int64_t unstamped = 0;
    stamp->compare_exchange_strong(unstamped, monotonicNowNs());
    if (trace::enabled()) {
      trace::instant(trace::Category::kDdp, fmt::format("bucket {} complete", index),
                     fmt::format("\"bucket\":{}", index));
    }
  });
}

}  // namespace distlab::ddp
