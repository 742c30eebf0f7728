// End of a synchronising backward: wait for every bucket, copy results back.
#include <atomic>

#include <fmt/format.h>

#include "runtime/autograd/training_observer.hpp"
#include "runtime/comm/debug/watchdog.hpp"
#include "runtime/core/debug_level.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"
#include "runtime/core/trace.hpp"
#include "runtime/ddp/reducer_internal.hpp"

namespace distlab::ddp {
namespace {

Tensor checkHookResult(const comm::Future::Value& value, const Tensor& bucketBuffer,
                       size_t index, const std::string& hookName) {
  if (value.size() != 1 || !value[0].defined() || value[0].numel() != bucketBuffer.numel()) {
    throw Error(fmt::format(
        "DDP communication hook '{}': the Future of bucket {} must hold a single tensor shaped "
        "like the bucket ({} elements), got {} tensor(s){}",
        hookName.empty() ? "allreduce" : hookName, index, bucketBuffer.numel(), value.size(),
        value.size() == 1 && value[0].defined()
            ? fmt::format(" of shape {}", shapeToString(value[0].sizes()))
            : std::string()));
  }
  return value[0];
}

}  // namespace

void Reducer::delayAllReduce() {
  // Static graph, first iteration: everything is reduced once backward ended.
  timing_.backwardComputeEndNs = monotonicNowNs();
  allreduceLocalUsedMap();
  unusedParameters_.clear();
  for (size_t i = 0; i < params_.size(); ++i) {
    if (hookCounts_[i] == 0) unusedParameters_.push_back(i);
  }
  if (debugLevel() != DebugLevel::kOff) {
    for (size_t i : unusedParameters_) {
      DL_LOG(INFO, "[Rank {}]: Parameter {} at index {} is marked as unused.", group_->rank(),
             names_[i], i);
    }
  }
  requireFinalize_ = true;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (hookCounts_[i] == 0) locallyUnusedThisIteration_[i] = 1;
    markVariableReady(i);
  }
  finalizeBackward();
}

void Reducer::finalizeBackward() {
  expectAutogradHooks_ = false;
  firstHookCalled_ = false;
  requireFinalize_ = false;
  if (nextBucket_ != buckets_.size()) {
    throw Error(fmt::format("DDP internal error: finalize with {} of {} buckets launched",
                            nextBucket_, buckets_.size()));
  }
  {
    trace::Span wait(trace::Category::kWait, "ddp wait for buckets");
    for (auto& bucket : buckets_) waitForBucket(*bucket);
  }
  if (usedMapIssued_) {
    // Note [Used map after hook collectives]: every bucket's Future completed.
    auto issued = std::move(usedMapIssued_);
    issued->value(group_->timeout());  // rethrows a failure to issue
    localUsedWork_ = *usedMapWork_;
  }
  for (auto& bucket : buckets_) finalizeBucket(*bucket);
  if ((dynamicFindUnused() || staticFirstIteration()) && localUsedWork_ && !localUsedMapReduced_) {
    localUsedWork_->wait(group_->timeout());
    localUsedMap_.copy_(localUsedMapSync_);
    localUsedMapReduced_ = true;
  }
  if (dynamicFindUnused()) {
    localUsedMap_.zero_();
    localUsedMapReduced_ = false;
  }
  localUsedWork_.reset();
  // can_set_static_graph: the per-parameter hook counts never changed.
  if (!options_.staticGraph) {
    if (numBwdCalls_ == 1) {
      hookCounts_ = observedCounts_;
    } else if (observedCounts_ != hookCounts_) {
      graphStatic_ = false;
    }
  }
  finalizeQueued_ = false;
  timing_.backwardCommEndNs = monotonicNowNs();
  notifyGradientsReady(params_);  // Note [Training observer]
}

void Reducer::waitForBucket(Bucket& bucket) {
  try {
    bucket.future->wait(group_->timeout());
    // The wait may have run the collective itself and seen it time out (Note
    // [Waiting on a Work's future helps]): named below as a timed-out wait is.
    if (std::exception_ptr error = bucket.future->exception()) std::rethrow_exception(error);
  } catch (const DistTimeoutError& e) {
    // Name what DDP was waiting for (a skipped backward or an unused
    // parameter on a peer shows up here), with the collective's own failure
    // (the watchdog's report naming the operation and the ranks it waits for)
    // when it arrives within a grace: the bucket's wait started after the
    // collective was issued, so the two timeouts race.
    std::string cause = e.what();
    try {
      bucket.future->value(comm::watchdogGrace(group_->timeout()));
    } catch (const std::exception& own) {
      cause = own.what();
    }
    throw DistTimeoutError(fmt::format(
        "DDP (rank {}, group '{}'): bucket {} of {} ({} bytes, {} parameters) of iteration {} "
        "did not complete within {} ms; a peer may have skipped backward or left a parameter "
        "unused: {}",
        group_->rank(), group_->name(), bucket.index, buckets_.size(), bucket.gradients.nbytes(),
        bucket.variableIndices.size(), numIterations_, group_->timeout().count(), cause));
  }
  // The stamping callback may still be running on the completing thread.
  int64_t expected = 0;
  bucket.completedNs->compare_exchange_strong(expected, monotonicNowNs());
  Tensor result = checkHookResult(bucket.future->value(), bucket.gradients, bucket.index,
                                  hookName_);
  if (detail::sameMemory(result, bucket.gradients)) {
    bucket.viewsOut = bucket.viewsIn;
    return;
  }
  bucket.viewsOut.clear();
  for (size_t s = 0; s < bucket.offsets.size(); ++s) {
    bucket.viewsOut.push_back(
        result.narrow(0, bucket.offsets[s], bucket.lengths[s]).view(bucket.sizes[s]));
  }
}

bool Reducer::globallyUnused(size_t index) {
  if (!(options_.staticGraph || options_.findUnusedParameters)) return false;
  bool unused = localUsedMap_.data<int32_t>()[index] == 0;
  if (unused && !localUsedMapReduced_ && localUsedWork_) {
    // Waited lazily: only when some parameter was unused locally.
    localUsedWork_->wait(group_->timeout());
    localUsedMap_.copy_(localUsedMapSync_);
    localUsedMapReduced_ = true;
    unused = localUsedMap_.data<int32_t>()[index] == 0;
  }
  return unused;
}

void Reducer::finalizeBucket(Bucket& bucket) {
  for (size_t slot = 0; slot < bucket.variableIndices.size(); ++slot) {
    const size_t v = bucket.variableIndices[slot];
    Tensor& param = params_[v];
    const bool unused = globallyUnused(v);  // such a .grad stays untouched
    const Tensor& out = bucket.viewsOut[slot];
    if (!options_.gradientAsBucketView) {
      if (unused) continue;
      Tensor grad = param.grad();
      if (!grad.defined()) {
        param.setGrad(out.clone());
      } else {
        grad.copy_(out);
      }
      continue;
    }
    Tensor& in = bucket.viewsIn[slot];
    if (!detail::sameMemory(in, out)) in.copy_(out);
    if (unused) continue;
    const Tensor grad = param.grad();
    if (!grad.defined()) {
      param.setGrad(in);
    } else if (!detail::sameMemory(grad, in)) {
      throw Error(
          "Detected at least one parameter gradient is not the expected DDP bucket view with "
          "gradient_as_bucket_view=True. This may happen (for example) if multiple allreduce "
          "hooks were registered onto the same parameter. If you hit this error, please file an "
          "issue with a minimal repro.");
    }
  }
}

Tensor Reducer::usedMapForComm() const {
  const Tensor copy = detail::onCommRoute(*group_, localUsedMap_, params_.front().device());
  return copy.isSame(localUsedMap_) ? localUsedMap_.clone() : copy;
}

void Reducer::allreduceLocalUsedMap() {
  localUsedMapSync_ = usedMapForComm();
  localUsedMapReduced_ = false;
  localUsedWork_ = group_->allreduce(localUsedMapSync_);
}

// Note [Used map after hook collectives]
// A comm hook may issue collectives from Future callbacks (PowerSGD does:
// Note [PowerSGD future chain]); a used-map allreduce issued on this thread
// could then come before some of them on one rank and after on another. With
// a hook registered the map (complete once every parameter was marked) is
// therefore allreduced once every bucket's Future completed, by the callback
// of the last one. The callbacks hold no pointer to the Reducer.
void Reducer::allreduceLocalUsedMapAfterHooks() {
  localUsedMapSync_ = usedMapForComm();
  localUsedMapReduced_ = false;
  localUsedWork_.reset();
  auto slot = std::make_shared<comm::WorkPtr>();
  auto issued = std::make_shared<comm::Future>();
  std::vector<FuturePtr> futures;
  for (const auto& bucket : buckets_) futures.push_back(bucket->future);
  auto left = std::make_shared<std::atomic<size_t>>(futures.size());
  auto issue = [group = group_, map = localUsedMapSync_, slot, issued, futures] {
    for (const auto& f : futures) {
      if (auto e = f->exception()) return issued->setError(e);  // the bucket's error wins
    }
    try {
      *slot = group->allreduce(map);
      issued->markCompleted({});
    } catch (...) {
      issued->setError(std::current_exception());
    }
  };
  for (const auto& f : futures) {
    f->addCallback([left, issue](comm::Future&) {
      if (left->fetch_sub(1) == 1) issue();
    });
  }
  usedMapWork_ = slot;
  usedMapIssued_ = issued;
}

}  // namespace distlab::ddp
