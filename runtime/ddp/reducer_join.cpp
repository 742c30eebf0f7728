// The Reducer's entry points for Join (Note [DDP under Join] in ddp_join.cpp).
#include <fmt/format.h>

#include "runtime/core/errors.hpp"
#include "runtime/ddp/reducer_internal.hpp"

namespace distlab::ddp {

void Reducer::setForwardPassWorkHandle(comm::WorkPtr vote, bool useStaticWorldSize) {
  voteFactor_.reset();
  forwardVote_ = useStaticWorldSize ? nullptr : std::move(vote);
}

FuturePtr Reducer::runCommHookOnZeroBucket(size_t bucketIndex) {
  if (bucketIndex >= buckets_.size()) {
    throw ValueError(fmt::format("runCommHookOnZeroBucket: bucket {} of {}", bucketIndex,
                                 buckets_.size()));
  }
  const Bucket& bucket = *buckets_[bucketIndex];
  Tensor zero = zerosLike(bucket.gradients);
  if (!hook_) return group_->allreduce(zero)->getFuture();
  std::vector<Tensor> params;
  for (size_t v : bucket.variableIndices) params.push_back(params_[v]);
  GradBucket gradBucket(bucket.index, buckets_.size(), zero, bucket.offsets, bucket.lengths,
                        bucket.sizes, std::move(params), group_);
  FuturePtr future = hook_(hookState_, gradBucket);
  if (!future) {
    throw Error(fmt::format("DDP communication hook '{}' returned no Future for bucket {}",
                            hookName_, bucket.index));
  }
  return future;
}

void Reducer::writeShadowResult(size_t bucketIndex, const Tensor& result) {
  const Bucket& bucket = *buckets_.at(bucketIndex);
  if (result.numel() != bucket.gradients.numel()) {
    throw Error(fmt::format("DDP communication hook '{}': the shadowed bucket {} returned {} "
                            "elements, expected {}",
                            hookName_, bucketIndex, result.numel(), bucket.gradients.numel()));
  }
  for (size_t slot = 0; slot < bucket.variableIndices.size(); ++slot) {
    Tensor& param = params_[bucket.variableIndices[slot]];
    Tensor view = result.narrow(0, bucket.offsets[slot], bucket.lengths[slot])
                      .view(bucket.sizes[slot]);
    Tensor grad = param.grad();
    if (grad.defined()) {
      grad.copy_(view);
    } else {
      param.setGrad(view.clone());
    }
  }
}

comm::WorkPtr Reducer::matchUsedMapAllreduce() {
  if (!dynamicFindUnused()) return nullptr;
  return group_->allreduce(usedMapForComm());
}

}  // namespace distlab::ddp
