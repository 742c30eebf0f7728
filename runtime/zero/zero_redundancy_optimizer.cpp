// ZeroRedundancyOptimizer: partition, local step, parameter broadcast, Join hook.
#include "runtime/zero/zero_redundancy_optimizer.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include <fmt/format.h>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::zero {
namespace {

class ZeroJoinHook : public join::JoinHook {
 public:
  explicit ZeroJoinHook(ZeroRedundancyOptimizer& zero) : zero_(zero) {}
  // Shadows the peers' step(): the local step on this rank's partition (with
  // the gradients DDP's hook left) and the broadcasts.
  void mainHook() override { zero_.step(); }

 private:
  ZeroRedundancyOptimizer& zero_;
};

}  // namespace

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params,
                                                 optim::OptimizerFactory factory,
                                                 comm::ProcessGroupPtr group, ZeroOptions options,
                                                 optim::Options defaults)
    : ZeroRedundancyOptimizer(std::vector<optim::ParamGroup>{{std::move(params), {}}},
                              std::move(factory), std::move(group), options,
                              std::move(defaults)) {}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<optim::ParamGroup> groups,
                                                 optim::OptimizerFactory factory,
                                                 comm::ProcessGroupPtr group, ZeroOptions options,
                                                 optim::Options defaults)
    : group_(std::move(group)),
      factory_(std::move(factory)),
      options_(options),
      defaults_(std::move(defaults)) {
  if (!group_ || !group_->isMember()) {
    throw ValueError(
        "ZeroRedundancyOptimizer: process_group must be a group this rank is a member of");
  }
  if (!factory_) throw ValueError("ZeroRedundancyOptimizer: optimizer factory is empty");
  if (options_.overlapWithDdp) checkOverlapOptions(groups, options_);
  std::vector<Tensor> all;
  for (const auto& g : groups) all.insert(all.end(), g.params.begin(), g.params.end());
  if (all.empty()) {
    throw ValueError(
        "ZeroRedundancyOptimizer: params is empty; pass at least one parameter (e.g. "
        "model->parameters())");
  }
  validateParams(all);
  for (const auto& g : groups) probeOptions(g.options);
  partition_.assign(static_cast<size_t>(group_->size()), {});
  rankNumel_.assign(static_cast<size_t>(group_->size()), 0);
  for (auto& g : groups) {
    for (const Tensor& p : g.params) params_.push_back(p);
    groups_.push_back(std::move(g));
    if (options_.overlapWithDdp) continue;  // partitioned by bucket later (initOverlap)
    partitionGroup(groups_.size() - 1);
    addLocalGroup(groups_.size() - 1);
  }
}

ZeroRedundancyOptimizer::~ZeroRedundancyOptimizer() = default;

void ZeroRedundancyOptimizer::validateParams(const std::vector<Tensor>& params) const {
  std::unordered_map<const TensorImpl*, size_t> seen;
  for (size_t i = 0; i < params_.size(); ++i) seen.emplace(params_[i].impl(), i);
  const Tensor& first = params_.empty() ? params.front() : params_.front();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const size_t pos = params_.size() + i;
    if (!p.defined()) throw ValueError(fmt::format("ZeroRedundancyOptimizer: params[{}] is undefined", pos));
    auto [it, fresh] = seen.emplace(p.impl(), pos);
    if (!fresh) {
      throw ValueError(fmt::format(
          "ZeroRedundancyOptimizer: params[{}] is the same tensor as params[{}]; each parameter "
          "may appear once (across all parameter groups)",
          pos, it->second));
    }
    if (!(p.device() == first.device())) {
      throw ValueError(fmt::format(
          "ZeroRedundancyOptimizer: params[{}] is on {} but params[0] is on {}; all parameters "
          "must be on the same device",
          pos, p.device().str(), first.device().str()));
    }
    if (p.dtype() != first.dtype()) {
      throw ValueError(fmt::format(
          "ZeroRedundancyOptimizer: params[{}] has dtype {} but params[0] has {}; all "
          "parameters must have the same dtype",
          pos, dtypeName(p.dtype()), dtypeName(first.dtype())));
    }
  }
}

// Every rank checks the options, also one that owns none of the group's
// parameters (its factory would never see them): a throwaway optimizer over
// a one-element tensor.
void ZeroRedundancyOptimizer::probeOptions(const optim::Options& options) const {
  factory_({optim::ParamGroup{{zeros({1})}, options}}, defaults_);
}

// Note [ZeRO partition] in the header.
void ZeroRedundancyOptimizer::partitionGroup(size_t groupIndex) {
  size_t start = 0;
  for (size_t g = 0; g < groupIndex; ++g) start += groups_[g].params.size();
  const auto& params = groups_[groupIndex].params;
  std::vector<size_t> order(params.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return params[a].numel() > params[b].numel();
  });
  owner_.resize(start + params.size(), -1);
  std::vector<std::vector<size_t>> added(partition_.size());
  for (size_t k : order) {
    const auto rank = static_cast<size_t>(
        std::min_element(rankNumel_.begin(), rankNumel_.end()) - rankNumel_.begin());
    rankNumel_[rank] += params[k].numel();
    owner_[start + k] = static_cast<int>(rank);
    added[rank].push_back(start + k);
  }
  for (size_t r = 0; r < partition_.size(); ++r) {
    std::sort(added[r].begin(), added[r].end());  // group order within a rank
    partition_[r].insert(partition_[r].end(), added[r].begin(), added[r].end());
  }
  buckets_.clear();  // rebuilt on the next step
}

void ZeroRedundancyOptimizer::addLocalGroup(size_t groupIndex) {
  size_t start = 0;
  for (size_t g = 0; g < groupIndex; ++g) start += groups_[g].params.size();
  optim::ParamGroup local;
  local.options = groups_[groupIndex].options;
  for (size_t k = 0; k < groups_[groupIndex].params.size(); ++k) {
    if (owner_[start + k] == group_->rank()) local.params.push_back(params_[start + k]);
  }
  localGroupOf_.push_back(-1);
  if (local.params.empty()) return;
  if (!local_) {
    local_ = factory_({std::move(local)}, defaults_);
  } else {
    optim::Options merged = defaults_;
    for (const auto& [k, v] : local.options) merged[k] = v;
    local.options = std::move(merged);
    local_->addParamGroup(std::move(local));
  }
  localGroupOf_.back() = static_cast<int>(local_->paramGroups().size()) - 1;
}

void ZeroRedundancyOptimizer::addParamGroup(optim::ParamGroup group) {
  if (options_.overlapWithDdp) {
    throw ValueError(
        "ZeroRedundancyOptimizer::addParamGroup: overlapWithDdp = true supports exactly one "
        "parameter group (PyTorch: \"Overlapping DDP with ZeRO only supports a single parameter "
        "group\"); construct with overlapWithDdp = false to add groups");
  }
  if (group.params.empty()) {
    throw ValueError("ZeroRedundancyOptimizer::addParamGroup: the group has no parameters");
  }
  validateParams(group.params);
  probeOptions(group.options);
  for (const Tensor& p : group.params) params_.push_back(p);
  groups_.push_back(std::move(group));
  partitionGroup(groups_.size() - 1);
  addLocalGroup(groups_.size() - 1);
}

void ZeroRedundancyOptimizer::syncLocalOptions() {
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (localGroupOf_[g] < 0) continue;
    auto& local = local_->paramGroups()[static_cast<size_t>(localGroupOf_[g])].options;
    for (const auto& [k, v] : groups_[g].options) local[k] = v;
  }
}

void ZeroRedundancyOptimizer::zeroGrad(bool setToNone) {
  for (Tensor& p : params_) {
    if (!p.grad().defined()) continue;
    if (setToNone) {
      p.setGrad(Tensor());
    } else {
      Tensor grad = p.grad();
      grad.zero_();
    }
  }
}

void ZeroRedundancyOptimizer::step() {
  join::Join::notifyJoinContext(*this);
  if (options_.overlapWithDdp) {
    checkOverlapHook();
    return;  // the hook steps and broadcasts (Note [ZeRO overlapped with DDP])
  }
  if (local_) {
    syncLocalOptions();
    local_->step();
  }
  if (options_.parametersAsBucketView) {
    broadcastBuckets();
  } else {
    broadcastParameters();
  }
}

void ZeroRedundancyOptimizer::broadcastParameters() {
  autograd::NoGradGuard noGrad;
  std::vector<comm::WorkPtr> works;
  for (size_t r = 0; r < partition_.size(); ++r) {
    comm::BroadcastOptions o;
    o.rootRank = static_cast<int>(r);
    for (size_t pos : partition_[r]) works.push_back(group_->broadcast(params_[pos], o));
  }
  for (auto& w : works) w->wait(group_->timeout());
}

// Note [ZeRO buckets]
// distlab tensors cannot re-point a parameter's storage (PyTorch assigns
// param.data to a view of the bucket), so with parametersAsBucketView each
// rank keeps one flat buffer per owner rank: the owner packs its updated
// parameters into its buffer, one broadcast per rank moves it, the others
// unpack. The communication is the bucketed one; the parameters stay separate
// tensors (one extra copy of the model in memory).
void ZeroRedundancyOptimizer::broadcastBuckets() {
  autograd::NoGradGuard noGrad;
  const auto world = partition_.size();
  if (buckets_.size() != world) {
    buckets_.clear();
    for (size_t r = 0; r < world; ++r) {
      int64_t numel = 0;
      for (size_t pos : partition_[r]) numel += params_[pos].numel();
      buckets_.push_back(zeros({numel}, TensorOptions{params_.front().dtype(), joinDevice()}));
    }
  }
  auto slices = [&](size_t r, auto&& fn) {
    int64_t offset = 0;
    for (size_t pos : partition_[r]) {
      Tensor view = buckets_[r].narrow(0, offset, params_[pos].numel()).view(params_[pos].sizes());
      fn(params_[pos], view);
      offset += params_[pos].numel();
    }
  };
  const auto me = static_cast<size_t>(group_->rank());
  slices(me, [](Tensor& p, Tensor& view) { view.copy_(p); });
  std::vector<comm::WorkPtr> works;
  for (size_t r = 0; r < world; ++r) {
    if (buckets_[r].numel() == 0) continue;
    comm::BroadcastOptions o;
    o.rootRank = static_cast<int>(r);
    works.push_back(group_->broadcast(buckets_[r], o));
  }
  for (auto& w : works) w->wait(group_->timeout());
  for (size_t r = 0; r < world; ++r) {
    if (r != me) slices(r, [](Tensor& p, Tensor& view) { p.copy_(view); });
  }
}

int64_t ZeroRedundancyOptimizer::localStateNumel() const {
  if (!local_) return 0;
  int64_t total = 0;
  for (const auto& [index, state] : local_->stateDict().state) {
    for (const auto& [name, buffer] : state.buffers) total += buffer.numel();
  }
  return total;
}

std::unique_ptr<join::JoinHook> ZeroRedundancyOptimizer::joinHook(const join::JoinKwargs&) {
  if (options_.overlapWithDdp) {
    throw ValueError(
        "ZeroRedundancyOptimizer: Join is not supported with overlapWithDdp = true (the "
        "bucket-wise steps run inside DDP's comm hook); construct the optimizer with "
        "overlapWithDdp = false to train uneven inputs under Join");
  }
  return std::make_unique<ZeroJoinHook>(*this);
}

}  // namespace distlab::zero
