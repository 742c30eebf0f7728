// Group creation: backends from the registry, wrapped in the installed
// decorators; and ProcessGroup::split.
#include <fmt/format.h>

#include <algorithm>

#include "distlab/config.hpp"
#include "runtime/comm/backend_options.hpp"
#include "runtime/comm/backend_registry.hpp"
#if DISTLAB_HAVE_CUDA
#include "runtime/comm/cuda_staging_backend.hpp"
#endif
#include "runtime/comm/process_group.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {

namespace {

// A host backend's CUDA route stages through pinned memory (Note [CUDA
// tensors on host backends]); every other route is the backend itself.
BackendPtr routeFor(const std::string& device, const std::string& backendName,
                    const BackendPtr& backend) {
#if DISTLAB_HAVE_CUDA
  if (device == "cuda" && lookupBackend(backendName).stagesCuda) {
    return makeCudaStagingBackend(backend);
  }
#else
  (void)device;
  (void)backendName;
#endif
  return backend;
}

}  // namespace

ProcessGroupPtr createProcessGroup(ProcessGroupConfig config,
                                   const std::map<std::string, std::string>& backendOptions) {
  if (!config.store) throw ValueError("createProcessGroup: a store is required");
  if (config.backendSpec.empty()) throw ValueError("createProcessGroup: no backend given");
  validateBackendOptions(backendOptions);  // before any backend touches the store
  if (config.globalRanks.empty()) {
    for (int r = 0; r < config.size; ++r) config.globalRanks.push_back(r);
  }
  if (!config.env) config.env = readRuntimeEnv();  // Note [Environment read once]
  const auto routes = parseBackendSpec(config.backendSpec);
  auto group = std::make_shared<ProcessGroup>(config);
  std::map<std::string, BackendPtr> byName;  // one backend per name serves several devices
  for (const auto& [device, backendName] : routes) {
    BackendPtr& backend = byName[backendName];
    if (!backend) {
      BackendContext ctx;
      ctx.store = config.store;
      ctx.storePrefix = fmt::format("pg/{}/{}/", config.name, backendName);
      ctx.rank = config.rank;
      ctx.size = config.size;
      ctx.timeout = config.timeout;
      ctx.groupName = config.name;
      ctx.groupDesc = config.description;
      ctx.globalRanks = config.globalRanks;
      ctx.options = backendOptions;
      ctx.env = *config.env;
      backend = applyBackendDecorators(createBackend(backendName, ctx), ctx);
    }
    group->setBackend(device == "cuda" ? DeviceType::kCUDA : DeviceType::kCPU,
                      routeFor(device, backendName, backend));
  }
  return group;
}

std::shared_ptr<ProcessGroup> ProcessGroup::split(const std::vector<int>& ranks,
                                                  std::string description) {
  checkMember("split");
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.empty() || std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw ValueError(fmt::format("split: ranks [{}] must be non-empty and distinct",
                                 fmt::join(ranks, ", ")));
  }
  for (int r : sorted) checkSplitRank(r);
  uint64_t index;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    index = ++splitCount_;
  }
  std::vector<int> global;
  for (int r : sorted) global.push_back(globalRanks_[r]);
  const std::string childName = fmt::format("{}_split{}", name(), index);
  std::array<BackendPtr, 2> backends;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    backends = backends_;
  }
  for (size_t i = 0; i < backends.size(); ++i) {  // each distinct backend once
    if (backends[i] && (i == 0 || backends[i] != backends[0])) {
      backends[i]->prepareSplit(childName, sorted);
    }
  }
  auto it = std::find(sorted.begin(), sorted.end(), rank());
  if (it == sorted.end()) return nonMember(childName, global);
  ProcessGroupConfig config;
  config.store = store();
  config.rank = static_cast<int>(it - sorted.begin());
  config.size = static_cast<int>(sorted.size());
  config.name = childName;
  config.description = description.empty() ? childName : std::move(description);
  config.timeout = timeout();
  config.globalRanks = global;
  config.backendSpec = config_.backendSpec;
  config.env = config_.env;  // the parent's read
  return createProcessGroup(config);
}

void ProcessGroup::checkSplitRank(int r) const {
  if (r < 0 || r >= size()) {
    throw ValueError(fmt::format("split: rank {} is out of range for group '{}' of size {}", r,
                                 name(), size()));
  }
}

}  // namespace distlab::comm
