// Bucket layout: building buckets from an assignment, and the one-time rebuild
// in gradient-ready order (Note [Initial buckets]).
#include <algorithm>

#include <fmt/format.h>

#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"
#include "runtime/ddp/reducer_internal.hpp"

namespace distlab::ddp {

void Reducer::initializeBuckets(std::vector<std::vector<size_t>> bucketIndices,
                                std::vector<int64_t> sizeLimits) {
  const size_t n = params_.size();
  std::vector<int> seen(n, 0);
  buckets_.clear();
  locators_.assign(n, Locator{});
  for (size_t b = 0; b < bucketIndices.size(); ++b) {
    auto bucket = std::make_unique<Bucket>();
    bucket->index = b;
    bucket->variableIndices = std::move(bucketIndices[b]);
    bucket->sizeLimit = b < sizeLimits.size() ? sizeLimits[b] : options_.bucketBytesCap;
    if (bucket->variableIndices.empty()) throw Error(fmt::format("Reducer: bucket {} is empty", b));
    const Tensor& first = params_.at(bucket->variableIndices.front());
    int64_t numel = 0;
    for (size_t v : bucket->variableIndices) {
      if (v >= n || seen[v]++) {
        throw Error(fmt::format("Reducer: parameter index {} is out of range or in two buckets", v));
      }
      const Tensor& p = params_[v];
      if (p.dtype() != first.dtype() || !(p.device() == first.device())) {
        throw ValueError(fmt::format(
            "Reducer: bucket {} mixes dtypes/devices ({} and {}); all parameters of a bucket "
            "must share dtype and device",
            b, dtypeName(first.dtype()), dtypeName(p.dtype())));
      }
      bucket->offsets.push_back(numel);
      bucket->lengths.push_back(p.numel());
      bucket->sizes.push_back(p.sizes());
      numel += p.numel();
    }
    bucket->gradients = zeros({numel}, TensorOptions{first.dtype(), first.device()});
    for (size_t slot = 0; slot < bucket->variableIndices.size(); ++slot) {
      const size_t v = bucket->variableIndices[slot];
      Tensor view =
          bucket->gradients.narrow(0, bucket->offsets[slot], bucket->lengths[slot]).view(
              bucket->sizes[slot]);
      bucket->viewsIn.push_back(view);
      locators_[v] = Locator{b, slot};
      if (options_.gradientAsBucketView) {
        const Tensor grad = params_[v].grad();
        if (grad.defined() && !detail::sameMemory(grad, view)) {
          view.copy_(grad);
          params_[v].setGrad(view);
        }
      }
    }
    bucket->viewsOut = bucket->viewsIn;
    bucket->pending = bucket->variableIndices.size();
    buckets_.push_back(std::move(bucket));
  }
  for (size_t v = 0; v < n; ++v) {
    if (!seen[v]) throw Error(fmt::format("Reducer: parameter {} is in no bucket", v));
  }
}

std::vector<std::vector<size_t>> Reducer::syncBucketIndices(
    std::vector<std::vector<size_t>> indices) {
  if (group_->size() == 1) return indices;
  const auto n = static_cast<int64_t>(params_.size());
  Tensor flat = zeros({n + 1}, TensorOptions{DType::kInt64});
  Tensor counts = zeros({n + 1}, TensorOptions{DType::kInt64});
  auto* f = flat.data<int64_t>();
  auto* c = counts.data<int64_t>();
  int64_t pos = 0;
  for (size_t b = 0; b < indices.size(); ++b) {
    for (size_t v : indices[b]) f[pos++] = static_cast<int64_t>(v);
    c[b] = static_cast<int64_t>(indices[b].size());
  }
  f[n] = static_cast<int64_t>(indices.size());
  for (Tensor* t : {&flat, &counts}) {
    Tensor routed = detail::onCommRoute(*group_, *t, params_.front().device());
    group_->broadcast(routed)->wait();
    if (!routed.isSame(*t)) t->copy_(routed);
  }
  std::vector<std::vector<size_t>> synced(static_cast<size_t>(f[n]));
  pos = 0;
  for (size_t b = 0; b < synced.size(); ++b) {
    for (int64_t k = 0; k < c[b]; ++k) synced[b].push_back(static_cast<size_t>(f[pos++]));
  }
  return synced;
}

void Reducer::pushAllRebuiltParams() {
  if (!shouldRebuildBuckets()) return;
  rebuiltParamIndices_.clear();
  for (size_t i = 0; i < params_.size(); ++i) rebuiltParamIndices_.push_back(i);
}

bool Reducer::rebuildBuckets() {
  ensurePriorReductionFinished();
  if (!shouldRebuildBuckets() || rebuiltParamIndices_.empty()) return false;
  if (rebuiltParamIndices_.size() != params_.size()) {
    throw Error(fmt::format(
        "rebuilt parameter indices size is not same as original model parameters size. "
        "Original model param size is: {} while rebuilt param size is: {}.",
        params_.size(), rebuiltParamIndices_.size()));
  }
  std::vector<size_t> order = rebuiltParamIndices_;
  const bool lastSmall = options_.setLastBucketCap;
  if (lastSmall) std::reverse(order.begin(), order.end());
  std::vector<TensorSpec> specs;
  for (size_t v : order) {
    specs.push_back(TensorSpec{params_[v].numel(), params_[v].dtype(), params_[v].device()});
  }
  const std::vector<int64_t> limits{options_.firstBucketBytesCap, options_.bucketBytesCap};
  BucketAssignment assignment = computeBucketAssignmentBySize(specs, limits, {}, order);
  if (lastSmall) {
    std::reverse(assignment.buckets.begin(), assignment.buckets.end());
    std::reverse(assignment.sizeLimits.begin(), assignment.sizeLimits.end());
  }
  auto synced = syncBucketIndices(assignment.buckets);
  if (synced.size() != assignment.sizeLimits.size()) {
    assignment.sizeLimits.assign(synced.size(), options_.bucketBytesCap);
  }
  hasRebuiltBuckets_ = true;
  rebuiltParamIndices_.clear();
  initializeBuckets(std::move(synced), assignment.sizeLimits);
  DL_LOG(DEBUG, "{} buckets rebuilt with size limits: {}, {} bytes.", buckets_.size(),
         limits[0], limits[1]);
  return true;
}

}  // namespace distlab::ddp
