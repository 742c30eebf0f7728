// Join: Note [Join protocol] in join.hpp.
#include "runtime/join/join.hpp"

#include <exception>

#include <fmt/format.h>

#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::join {
namespace {

Tensor scalarOnes(const Device& device, double value) {
  return full({1}, value, TensorOptions{DType::kFloat32, device});
}

// The sum over the group of `value` (blocking, the group's timeout).
double allreduceScalar(const comm::ProcessGroupPtr& group, const Device& device, double value) {
  Tensor t = scalarOnes(device, value);
  group->allreduce(t)->wait();
  return t.to(Device::cpu()).item<double>();
}

}  // namespace

Join::Join(std::vector<Joinable*> joinables, JoinOptions options)
    : joinables_(std::move(joinables)),
      options_(std::move(options)),
      uncaughtAtEntry_(std::uncaught_exceptions()) {
  if (joinables_.empty()) {
    throw ValueError("The join context manager requires at least one joinable");
  }
  for (size_t i = 0; i < joinables_.size(); ++i) {
    if (joinables_[i] == nullptr) {
      throw ValueError(fmt::format(
          "The join context manager requires at least one joinable (joinables[{}] is null)", i));
    }
    comm::ProcessGroupPtr group = joinables_[i]->joinProcessGroup();
    if (!group) throw ValueError(fmt::format("Join: joinables[{}] has no process group", i));
    if (!group_) {
      group_ = group;
      device_ = joinables_[i]->joinDevice();
    } else if (group != group_) {
      throw ValueError(fmt::format(
          "Using join context manager with multiple process groups (joinables[0] uses group "
          "'{}', joinables[{}] uses group '{}'); every joinable must use the same process group",
          group_->name(), i, group->name()));
    }
  }
  for (size_t i = 0; i < joinables_.size(); ++i) {
    hooks_.push_back(joinables_[i]->joinHook(options_.kwargs));
    if (!hooks_.back()) throw ValueError(fmt::format("Join: joinables[{}] returned no hook", i));
  }
  for (size_t i = 0; i < joinables_.size(); ++i) {
    joinables_[i]->joinConfig_ =
        JoinConfig{options_.enable, options_.throwOnEarlyTermination, i == 0};
    joinables_[i]->context_ = this;
  }
}

Join::~Join() noexcept(false) {
  if (exited_) return;
  if (std::uncaught_exceptions() > uncaughtAtEntry_) {
    abandon();  // leaving by an exception: nothing is shadowed
    return;
  }
  exit();
}

void Join::abandon() {
  exited_ = true;
  for (Joinable* j : joinables_) {
    j->joinConfig_ = JoinConfig{};
    j->context_ = nullptr;
  }
}

void Join::exit() {
  if (exited_) return;
  struct Reset {
    Join* self;
    ~Reset() { self->abandon(); }
  } reset{this};
  if (!options_.enable) return;
  bool isLastJoiner = true;
  bool warned = false;
  while (countNonJoined() > 0) {
    if (shadowed_ > kSkewWarnThreshold && !warned) {
      warned = true;
      DL_LOG(WARNING,
             "Detected uneven input skew of greater than {}. This means that rank {} has at "
             "least {} fewer inputs than other currently-active ranks. This level of skew could "
             "lead to performance degradation during training.",
             kSkewWarnThreshold, group_->rank(), kSkewWarnThreshold);
    }
    if (options_.throwOnEarlyTermination) notifyToTerminate();
    for (auto& hook : hooks_) hook->mainHook();
    isLastJoiner = false;
    ++shadowed_;
  }
  for (auto& hook : hooks_) hook->postHook(isLastJoiner);
}

int64_t Join::countNonJoined() {
  return static_cast<int64_t>(allreduceScalar(group_, device_, 0.0));
}

void Join::notifyToTerminate() {
  allreduceScalar(group_, device_, 1.0);
  throw Error(fmt::format("Rank {} exhausted all inputs.", group_->rank()));
}

comm::WorkPtr Join::notifyJoinContext(Joinable& joinable) {
  const JoinConfig& config = joinable.joinConfig();
  if (!config.isFirstJoinable || !config.enable) return nullptr;
  const comm::ProcessGroupPtr group = joinable.joinProcessGroup();
  const Device device = joinable.joinDevice();
  Tensor vote = scalarOnes(device, 1.0);
  comm::WorkPtr work = group->allreduce(vote);
  if (config.throwOnEarlyTermination) {
    if (allreduceScalar(group, device, 0.0) != 0.0) {
      work->wait();
      if (joinable.context_) joinable.context_->abandon();
      throw Error(
          "Detected at least one rank that exhausted inputs. Throwing across all ranks.");
    }
  }
  return work;
}

}  // namespace distlab::join
