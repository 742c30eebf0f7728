#include "runtime/comm/process_group.hpp"

#include <fmt/format.h>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/comm_trace.hpp"
#include "runtime/comm/op_checks.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::comm {

using detail::checkListSize;
using detail::checkRank;
using detail::checkSameDtype;
using detail::checkTensor;
using detail::checkTensors;

ProcessGroup::ProcessGroup(ProcessGroupConfig config) : ProcessGroup(std::move(config), true) {}

ProcessGroup::ProcessGroup(ProcessGroupConfig config, bool member)
    : config_(std::move(config)), member_(member) {
  globalRanks_ = config_.globalRanks;
  if (globalRanks_.empty()) {
    for (int r = 0; r < config_.size; ++r) globalRanks_.push_back(r);
  }
  for (size_t i = 0; i < globalRanks_.size(); ++i) {
    globalToGroup_[globalRanks_[i]] = static_cast<int>(i);
  }
  if (member_) {
    if (config_.size < 1 || config_.rank < 0 || config_.rank >= config_.size) {
      throw ValueError(fmt::format("ProcessGroup '{}': rank {} is out of range for size {}",
                                   config_.name, config_.rank, config_.size));
    }
    if (static_cast<int>(globalRanks_.size()) != config_.size) {
      throw ValueError(fmt::format("ProcessGroup '{}': {} global ranks given for size {}",
                                   config_.name, globalRanks_.size(), config_.size));
    }
  }
  sendCounts_.assign(globalRanks_.size(), 0);
  recvCounts_.assign(globalRanks_.size(), 0);
}

std::shared_ptr<ProcessGroup> ProcessGroup::nonMember(std::string name,
                                                      std::vector<int> globalRanks) {
  ProcessGroupConfig config;
  config.name = std::move(name);
  config.size = static_cast<int>(globalRanks.size());
  config.rank = -1;
  config.globalRanks = std::move(globalRanks);
  return std::shared_ptr<ProcessGroup>(new ProcessGroup(std::move(config), false));
}

ProcessGroup::~ProcessGroup() = default;

std::string ProcessGroup::backendName() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (backends_[static_cast<int>(DeviceType::kCPU)] && !backends_[1]) {
    return backends_[0]->name();
  }
  if (backends_[0] && backends_[1] && backends_[0]->name() == backends_[1]->name()) {
    return backends_[0]->name();
  }
  return config_.backendSpec;
}

int ProcessGroup::groupRankOf(int globalRank) const {
  auto it = globalToGroup_.find(globalRank);
  if (it == globalToGroup_.end()) {
    throw Error(fmt::format("global rank {} is not part of group '{}'", globalRank, name()));
  }
  return it->second;
}

int ProcessGroup::globalRankOf(int groupRank) const {
  if (groupRank < 0 || groupRank >= groupSize()) {
    throw Error(fmt::format("group rank {} is not part of group '{}' (size {})", groupRank,
                            name(), groupSize()));
  }
  return globalRanks_[groupRank];
}

bool ProcessGroup::containsGlobalRank(int globalRank) const {
  return globalToGroup_.count(globalRank) > 0;
}

int ProcessGroup::resolveGroupRank(std::optional<int> globalRank, std::optional<int> groupRank,
                                   std::string_view what, int defaultGroupRank) const {
  if (globalRank && groupRank) {
    throw ValueError(fmt::format("Invalid to specify both {} and group_{}", what, what));
  }
  if (groupRank) {
    checkRank(*groupRank, groupSize(), name(), fmt::format("group_{}", what));
    return *groupRank;
  }
  if (globalRank) {
    if (!containsGlobalRank(*globalRank)) {
      throw ValueError(fmt::format("{} {} is not part of group '{}'", what, *globalRank, name()));
    }
    return groupRankOf(*globalRank);
  }
  if (defaultGroupRank < 0) {
    throw ValueError(fmt::format("Must specify one of {} and group_{}", what, what));
  }
  return defaultGroupRank;
}

void ProcessGroup::setBackend(DeviceType device, BackendPtr backend) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto index = static_cast<size_t>(device);
  if (backends_[index]) replaced_.push_back(backends_[index]);  // Note [Backends without a lock]
  backends_[index] = std::move(backend);
  backendPtrs_[index].store(backends_[index].get(), std::memory_order_release);
}

BackendPtr ProcessGroup::getBackend(DeviceType device) const {
  return backendForDevice(device, "getBackend").shared_from_this();  // backends are shared-owned
}

bool ProcessGroup::hasBackend(DeviceType device) const {
  const auto index = static_cast<size_t>(device);
  return index < backendPtrs_.size() &&
         backendPtrs_[index].load(std::memory_order_acquire) != nullptr;
}

Backend& ProcessGroup::backendForDevice(DeviceType device, std::string_view op) const {
  // Meta tensors (no data) have no backend; backendPtrs_ holds cpu and cuda.
  const auto index = static_cast<size_t>(device);
  Backend* b = index < backendPtrs_.size() ? backendPtrs_[index].load(std::memory_order_acquire)
                                           : nullptr;
  if (!b) {
    throw DistBackendError(fmt::format("{}: group '{}' has no backend for device type {}", op,
                                       name(), deviceTypeName(device)));
  }
  return *b;
}

Backend& ProcessGroup::backendFor(const Tensor& tensor, std::string_view op) const {
  if (!tensor.defined() && !hasBackend(DeviceType::kCPU) && hasBackend(DeviceType::kCUDA)) {
    return backendForDevice(DeviceType::kCUDA, op);  // barrier on a CUDA-only group ("nccl")
  }
  return backendForDevice(tensor.defined() ? tensor.device().type : DeviceType::kCPU, op);
}

void ProcessGroup::checkMember(std::string_view op) const {
  if (!member_) {
    throw ValueError(fmt::format("{}: this rank is not a member of group '{}' (ranks {})", op,
                                 name(), fmt::join(globalRanks_, ", ")));
  }
}

void ProcessGroup::checkHealthy(const Backend& backend, std::string_view op) const {
  if (auto why = backend.errorReason()) {
    std::rethrow_exception(refusedWorkError(std::string(op), name(), *why));
  }
}

uint64_t ProcessGroup::sequenceNumber() const { return seq_.load(std::memory_order_acquire); }
uint64_t ProcessGroup::sendCount(int peer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sendCounts_.at(peer);
}
uint64_t ProcessGroup::recvCount(int peer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return recvCounts_.at(peer);
}

uint64_t ProcessGroup::nextSeq() { return seq_.fetch_add(1, std::memory_order_acq_rel) + 1; }

Milliseconds ProcessGroup::resolveTimeout(Milliseconds timeout) const {
  return timeout.count() <= 0 ? config_.timeout : timeout;
}

void ProcessGroup::checkPeer(int peer, std::string_view op) const {
  checkRank(peer, size(), op, "peer");
}

WorkPtr ProcessGroup::observe(WorkPtr work) {
  // Most groups have no factories and no trace running: two atomic loads.
  if (hasObserverFactories_.load(std::memory_order_acquire)) {
    std::vector<WorkObserverFactory> factories;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      factories = observerFactories_;
    }
    for (auto& f : factories) {
      if (auto o = f(*work)) work->addObserver(std::move(o));
    }
  }
  if (trace::enabled()) {
    if (auto o = traceObserver(*work)) work->addObserver(std::move(o));  // comm_trace.hpp
  }
  return work;
}

void ProcessGroup::addWorkObserverFactory(WorkObserverFactory factory) {
  std::lock_guard<std::mutex> lock(mutex_);
  observerFactories_.push_back(std::move(factory));
  hasObserverFactories_.store(true, std::memory_order_release);
}

void ProcessGroup::abort(const std::string& reason) {
  std::array<BackendPtr, 2> backends;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    backends = backends_;
  }
  for (auto& b : backends) {
    if (b) b->abort(reason);
  }
}

void ProcessGroup::shutdown(Milliseconds timeout) {
  std::array<BackendPtr, 2> backends;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    backends = backends_;
  }
  for (auto& b : backends) {
    if (b) b->shutdown(timeout);
  }
}

}  // namespace distlab::comm
