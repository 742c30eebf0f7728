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

comm::WorkPtr Reducer::matchUsedMapAllreduce() {
  if (!dynamicFindUnused()) return nullptr;
  return group_->allreduce(localUsedMap_.clone());
}

}  // namespace distlab::ddp
