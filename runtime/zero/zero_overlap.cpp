// ZeroRedundancyOptimizer with overlapWithDdp: the checks, the bucket
// partition and the per-bucket local step the DDP hook drives
// (Note [ZeRO overlapped with DDP] in zero_ddp_hook.hpp).
#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"
#include "runtime/zero/zero_redundancy_optimizer.hpp"

namespace distlab::zero {

void ZeroRedundancyOptimizer::checkOverlapOptions(const std::vector<optim::ParamGroup>& groups,
                                                  const ZeroOptions& options) {
  if (groups.size() != 1) {
    throw ValueError(fmt::format(
        "ZeroRedundancyOptimizer: overlapWithDdp = true supports exactly one parameter group, "
        "got {} (PyTorch: \"Overlapping DDP with ZeRO only supports a single parameter group\"); "
        "pass one group or construct with overlapWithDdp = false",
        groups.size()));
  }
  if (options.parametersAsBucketView) {
    DL_LOG(WARNING,
           "ZeroRedundancyOptimizer: parametersAsBucketView = true will be ignored since "
           "overlapWithDdp = true; the parameters are packed by DDP's gradient buckets instead");
  }
}

void ZeroRedundancyOptimizer::checkOverlapHook() const {
  if (overlapHookAttached_) return;
  throw Error(
      "ZeroRedundancyOptimizer: overlapWithDdp = true but no DDP comm hook drives this "
      "optimizer, so the parameters would never be updated; register "
      "zero::hookWithZeroStep(ddp::allreduceHook, ddp, zero) on the DDP model "
      "(ddp.registerCommHook) before the first forward, or construct with "
      "overlapWithDdp = false");
}

void ZeroRedundancyOptimizer::checkOverlapInitialized(const char* method) const {
  if (!options_.overlapWithDdp || overlapInitialized_) return;
  throw Error(fmt::format(
      "ZeroRedundancyOptimizer::{}: This method should not be called until this "
      "ZeroRedundancyOptimizer instance has been fully initialized (overlapWithDdp = true: "
      "the partition is made by the DDP hook once DDP's buckets are rebuilt, i.e. after the "
      "second training iteration, the third with static_graph)",
      method));
}

size_t ZeroRedundancyOptimizer::positionOf(const Tensor& param, const char* what) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].impl() == param.impl()) return i;
  }
  throw ValueError(fmt::format(
      "ZeroRedundancyOptimizer (overlapWithDdp): {} a parameter (shape {}) that is not one of "
      "the optimizer's params; construct the optimizer with the DDP model's parameters",
      what, shapeToString(param.sizes())));
}

void ZeroRedundancyOptimizer::attachOverlapHook(const std::vector<Tensor>& ddpParams) {
  if (!options_.overlapWithDdp) {
    throw ValueError(
        "zero::hookWithZeroStep: the ZeroRedundancyOptimizer must be constructed with "
        "overlapWithDdp = true to use this hook");
  }
  if (overlapHookAttached_) {
    throw ValueError(
        "zero::hookWithZeroStep: a hook was already made for this ZeroRedundancyOptimizer; "
        "one optimizer is driven by one DDP model's hook");
  }
  std::vector<bool> seen(params_.size(), false);
  for (const Tensor& p : ddpParams) seen[positionOf(p, "the DDP model has")] = true;
  const auto missing = std::find(seen.begin(), seen.end(), false);
  if (missing != seen.end()) {
    throw ValueError(fmt::format(
        "zero::hookWithZeroStep: params[{}] of the ZeroRedundancyOptimizer is not a parameter "
        "of the DDP model (or its all-reduce is delayed), so no bucket would step it",
        missing - seen.begin()));
  }
  overlapHookAttached_ = true;
}

void ZeroRedundancyOptimizer::initOverlap(const std::vector<std::vector<Tensor>>& bucketParams) {
  const auto world = static_cast<size_t>(group_->size());
  owner_.assign(params_.size(), -1);
  partition_.assign(world, {});
  rankNumel_.assign(world, 0);
  for (size_t b = 0; b < bucketParams.size(); ++b) {
    const int rank = static_cast<int>(b % world);
    for (const Tensor& p : bucketParams[b]) {
      const size_t pos = positionOf(p, "a DDP bucket holds");
      if (owner_[pos] >= 0) {
        throw Error(fmt::format(
            "ZeroRedundancyOptimizer (overlapWithDdp): params[{}] is in two DDP buckets", pos));
      }
      owner_[pos] = rank;
      partition_[static_cast<size_t>(rank)].push_back(pos);
      rankNumel_[static_cast<size_t>(rank)] += p.numel();
    }
  }
  const auto missing = std::find(owner_.begin(), owner_.end(), -1);
  if (missing != owner_.end()) {
    throw Error(fmt::format(
        "ZeroRedundancyOptimizer (overlapWithDdp): params[{}] is in no DDP bucket",
        missing - owner_.begin()));
  }
  for (auto& positions : partition_) std::sort(positions.begin(), positions.end());
  local_.reset();
  localGroupOf_.clear();
  addLocalGroup(0);
  overlapInitialized_ = true;
}

void ZeroRedundancyOptimizer::stepOwned(const std::vector<Tensor>& params,
                                        const std::vector<Tensor>& grads) {
  DL_CHECK(local_ != nullptr, "stepOwned: this rank owns no bucket");
  DL_CHECK(params.size() == grads.size(), "stepOwned: one gradient per parameter");
  auto& localParams = local_->paramGroups().front().params;
  std::vector<Tensor> saved;
  saved.reserve(localParams.size());
  for (Tensor& p : localParams) {
    saved.push_back(p.grad());
    p.setGrad(Tensor());  // skipped by the step
  }
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i];
    p.setGrad(grads[i]);
  }
  auto restore = [&] {
    for (size_t i = 0; i < localParams.size(); ++i) localParams[i].setGrad(saved[i]);
  };
  try {
    syncLocalOptions();
    local_->step();
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

}  // namespace distlab::zero
