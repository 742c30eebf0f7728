// Reducer construction, hooks registration, configuration and introspection.
// The iteration logic is split by concern: reducer_buckets.cpp (layout and
// rebuild), reducer_ready.cpp (marking ready, launching), reducer_finalize.cpp
// (waiting and copying back), reducer_unused.cpp (unused parameters, errors).
#include "runtime/ddp/reducer.hpp"

#include <fmt/format.h>

#include "runtime/core/errors.hpp"
#include "runtime/ddp/reducer_internal.hpp"

namespace distlab::ddp {

Reducer::Reducer(std::vector<Tensor> params, std::vector<std::string> names,
                 std::vector<std::vector<size_t>> bucketIndices, std::vector<int64_t> sizeLimits,
                 comm::ProcessGroupPtr group, ReducerOptions options)
    : params_(std::move(params)),
      names_(std::move(names)),
      group_(std::move(group)),
      options_(options) {
  if (params_.empty()) {
    throw ValueError("Reducer: no parameters to reduce");
  }
  if (names_.size() != params_.size()) {
    throw ValueError(fmt::format("Reducer: {} names for {} parameters", names_.size(),
                                 params_.size()));
  }
  const size_t n = params_.size();
  localUsedMap_ = zeros({static_cast<int64_t>(n)}, TensorOptions{DType::kInt32});
  readyThisIteration_.assign(n, 0);
  locallyUnusedThisIteration_.assign(n, 0);
  hookCounts_.assign(n, 0);
  hookCountsThisIteration_.assign(n, 0);
  observedCounts_.assign(n, 0);
  initializeBuckets(std::move(bucketIndices), std::move(sizeLimits));
  for (size_t i = 0; i < n; ++i) {
    hookHandles_.push_back(autograd::registerPostAccumulateGradHook(
        params_[i], [this, i](Tensor& /*leaf*/) { autogradHook(i); }));
  }
}

Reducer::~Reducer() {
  for (auto& handle : hookHandles_) handle.remove();
}

void Reducer::registerCommHook(HookState state, CommHookFn hook, std::string name) {
  if (hook_) {
    throw Error(
        "register_comm_hook or register_builtin_comm_hook can only be called once.");
  }
  if (!hook) throw ValueError("registerCommHook: the hook is empty");
  hookState_ = std::move(state);
  hook_ = std::move(hook);
  hookName_ = std::move(name);
}

void Reducer::setStaticGraph() {
  if (numIterations_ > 0) {
    throw Error(
        "set_static_graph() should be called before training loop starts and after "
        "DistributedDataParallel is constructed.");
  }
  options_.staticGraph = true;
}

std::vector<BucketInfo> Reducer::bucketInfos() const {
  std::vector<BucketInfo> out;
  for (const auto& b : buckets_) {
    out.push_back(BucketInfo{b->index, b->variableIndices, b->gradients.numel(),
                             b->gradients.dtype(), b->sizeLimit});
  }
  return out;
}

std::vector<BucketTiming> Reducer::lastBucketTimings() const {
  std::vector<BucketTiming> out;
  for (const auto& b : buckets_) {
    out.push_back(BucketTiming{b->index, b->variableIndices.size(),
                               static_cast<int64_t>(b->gradients.nbytes()), b->communicated,
                               b->readyNs, b->launchedNs, b->completedNs->load()});
  }
  return out;
}

int64_t Reducer::divFactor() const {
  if (divFactorOverride_) return *divFactorOverride_;
  if (voteFactor_) return *voteFactor_;
  if (forwardVote_) {
    forwardVote_->wait(group_->timeout());
    const std::vector<Tensor> sum = forwardVote_->result();
    if (sum.empty()) throw Error("DDP: the Join vote allreduce completed without a result");
    voteFactor_ = static_cast<int64_t>(sum.front().to(Device::cpu()).item<float>());
    return *voteFactor_;
  }
  return group_->size();
}

namespace detail {

void copyScaled(Tensor& dst, const Tensor& src, double factor) {
  if (dst.device().isCpu() && src.device().isCpu() && dst.isContiguous() &&
      src.isContiguous() && dst.dtype() == src.dtype() && dst.numel() == src.numel()) {
    const int64_t n = dst.numel();
    if (dst.dtype() == DType::kFloat32) {
      float* d = dst.data<float>();
      const float* s = src.data<float>();
      const auto f = static_cast<float>(factor);
      for (int64_t i = 0; i < n; ++i) d[i] = s[i] * f;
      return;
    }
    if (dst.dtype() == DType::kFloat64) {
      double* d = dst.data<double>();
      const double* s = src.data<double>();
      for (int64_t i = 0; i < n; ++i) d[i] = s[i] * factor;
      return;
    }
  }
  dst.copy_(src);
  dst.mul_(factor);
}

std::string joinIndices(const std::vector<size_t>& indices) {
  std::string out;
  for (size_t i : indices) {
    if (!out.empty()) out += ' ';
    out += std::to_string(i);
  }
  return out;
}

}  // namespace detail
}  // namespace distlab::ddp
