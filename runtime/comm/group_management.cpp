#include "runtime/comm/group_management.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "runtime/comm/backend_options.hpp"
#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/debug/debug_install.hpp"
#include "runtime/comm/init_hook.hpp"
#include "runtime/comm/world.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab::comm {
namespace {

ProcessGroupPtr orDefault(const ProcessGroupPtr& group) { return group ? group : defaultGroup(); }

std::string defaultBackendSpec() {
  return isBackendRegistered("gloo") ? "gloo" : "shm";
}

// kUnsetTimeout (or any non-positive value) means the backend's default.
Milliseconds resolveInitTimeout(Milliseconds given, const std::string& spec) {
  if (given.count() > 0) return given;
  return spec == "nccl" ? kDefaultNcclTimeout : kDefaultProcessGroupTimeout;
}

}  // namespace

ProcessGroupPtr initProcessGroup(const InitOptions& given) {
  detail::World& world = detail::currentWorld();
  if (world.defaultGroup) {
    throw ValueError("initProcessGroup: trying to initialize the default process group twice");
  }
  InitOptions options = given;
  // Every variable, once per initialization, before anything can block: a bad
  // value fails here, naming it (Note [Environment read once]).
  const RuntimeEnv env = readRuntimeEnv();
  const InitHook* hook = detail::initHookFor(env);  // Note [Programs under a scenario]
  if (hook) hook->prepare(options, env);
  if (options.store && !options.initMethod.empty()) {
    throw ValueError("initProcessGroup: store and initMethod are mutually exclusive");
  }
  validateBackendOptions(options.backendOptions);  // before the rendezvous can block
  // The unset timeout resolves to its documented default before anything uses
  // it, the rendezvous included (it would refuse kUnsetTimeout as negative).
  const std::string spec = options.backend.empty() ? defaultBackendSpec() : options.backend;
  const Milliseconds timeout = resolveInitTimeout(options.timeout, spec);
  detail::Rendezvous rv;
  if (options.store) {
    if (options.worldSize < 1 || options.rank < 0) {
      throw ValueError(
          "initProcessGroup: world size and rank are required when a store is given");
    }
    rv = {options.store, options.rank, options.worldSize};
  } else {
    rv = detail::rendezvous(options.initMethod.empty() ? "env://" : options.initMethod,
                            options.rank, options.worldSize, timeout, env);
  }
  if (rv.rank < 0 || rv.rank >= rv.worldSize) {
    throw ValueError(fmt::format("initProcessGroup: rank {} should be a number between 0 and "
                                 "world_size-1 ({})",
                                 rv.rank, rv.worldSize - 1));
  }
  if (hook) rv.store = hook->wrapStore(rv.store, rv.rank, rv.worldSize);
  ++world.generation;
  world.store = rv.store;
  world.worldSize = rv.worldSize;
  world.globalRank = rv.rank;
  world.backendSpec = spec;
  world.timeout = timeout;
  world.backendOptions = options.backendOptions;
  world.env = env;
  installDebugDecorators();  // DETAIL wrapper, flight recorder, watchdog (runtime/comm/debug)
  ProcessGroupConfig config;
  config.store = rv.store;
  config.rank = rv.rank;
  config.size = rv.worldSize;
  config.name = fmt::format("w{}_default", world.generation);
  config.description = options.groupDesc;
  config.timeout = timeout;
  config.backendSpec = spec;
  config.env = env;
  world.defaultGroup = createProcessGroup(config, options.backendOptions);
  setLogRank(rv.rank);
  return world.defaultGroup;
}

bool isInitialized() { return detail::currentWorld().defaultGroup != nullptr; }

ProcessGroupPtr defaultGroup() {
  detail::World& world = detail::currentWorld();
  if (!world.defaultGroup) {
    throw Error("Default process group has not been initialized, please make sure to call "
                "initProcessGroup");
  }
  return world.defaultGroup;
}

void destroyProcessGroup(const ProcessGroupPtr& group) {
  detail::World& world = detail::currentWorld();
  const Milliseconds grace(5000);
  if (group == nullptr || group == world.defaultGroup) {
    for (auto& g : world.groups) {
      if (g->isMember()) g->shutdown(grace);
    }
    if (world.defaultGroup) world.defaultGroup->shutdown(grace);
    const int generation = world.generation;
    world = detail::World{};
    world.generation = generation;
    return;
  }
  if (group->isMember()) group->shutdown(grace);
  std::erase(world.groups, group);
}

int getRank(const ProcessGroupPtr& group) { return orDefault(group)->rank(); }
int getWorldSize(const ProcessGroupPtr& group) { return orDefault(group)->size(); }

std::string getBackend(const ProcessGroupPtr& group) {
  ProcessGroupPtr g = orDefault(group);
  if (!g->isMember()) {
    throw Error(fmt::format("getBackend: this rank is not part of group '{}'", g->name()));
  }
  return g->backendName();
}

ProcessGroupPtr newGroup(const NewGroupOptions& options) {
  detail::World& world = detail::currentWorld();
  defaultGroup();  // throws when not initialized
  std::vector<int> ranks = options.ranks;
  if (ranks.empty()) {
    for (int r = 0; r < world.worldSize; ++r) ranks.push_back(r);
  }
  std::sort(ranks.begin(), ranks.end());
  if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) {
    throw ValueError(fmt::format("newGroup: ranks [{}] contain duplicates", fmt::join(ranks, ", ")));
  }
  for (int r : ranks) {
    if (r < 0 || r >= world.worldSize) {
      throw ValueError(fmt::format("newGroup: rank {} is out of range for world size {}", r,
                                   world.worldSize));
    }
  }
  std::string name;
  if (options.useLocalSynchronization) {
    const std::string key = fmt::format("{}", fmt::join(ranks, "_"));
    name = fmt::format("w{}_local_{}_{}", world.generation, key, world.localCounters[key]++);
  } else {
    name = fmt::format("w{}_g{}", world.generation, ++world.groupCounter);
  }
  const bool member = std::binary_search(ranks.begin(), ranks.end(), world.globalRank);
  if (!member) {
    auto handle = ProcessGroup::nonMember(name, ranks);
    world.groups.push_back(handle);
    return handle;
  }
  ProcessGroupConfig config;
  config.store = world.store;
  config.rank = static_cast<int>(std::lower_bound(ranks.begin(), ranks.end(), world.globalRank) -
                                 ranks.begin());
  config.size = static_cast<int>(ranks.size());
  config.name = name;
  config.description = options.groupDesc.empty() ? name : options.groupDesc;
  config.timeout = options.timeout.count() > 0 ? options.timeout : world.timeout;
  config.globalRanks = ranks;
  config.backendSpec = options.backend.empty() ? world.backendSpec : options.backend;
  config.env = world.env;
  auto opts = world.backendOptions;
  for (const auto& [k, v] : options.backendOptions) opts[k] = v;
  ProcessGroupPtr group = createProcessGroup(config, opts);
  if (options.useLocalSynchronization) group->barrier()->wait();
  world.groups.push_back(group);
  return group;
}

std::pair<ProcessGroupPtr, std::vector<ProcessGroupPtr>> newSubgroupsByEnumeration(
    const std::vector<std::vector<int>>& rankLists, const NewGroupOptions& options) {
  std::set<int> seen;
  for (const auto& list : rankLists) {
    for (int r : list) {
      if (!seen.insert(r).second) {
        throw ValueError(fmt::format(
            "newSubgroupsByEnumeration: rank {} appears in more than one subgroup", r));
      }
    }
  }
  ProcessGroupPtr mine;
  std::vector<ProcessGroupPtr> all;
  for (const auto& list : rankLists) {
    NewGroupOptions o = options;
    o.ranks = list;
    o.useLocalSynchronization = false;
    all.push_back(newGroup(o));
    if (all.back()->isMember()) mine = all.back();
  }
  return {mine, all};
}

std::pair<ProcessGroupPtr, std::vector<ProcessGroupPtr>> newSubgroups(
    int groupSize, const NewGroupOptions& options) {
  const int world = getWorldSize();
  if (groupSize <= 0) groupSize = world;
  if (groupSize > world || world % groupSize != 0) {
    throw ValueError(fmt::format(
        "newSubgroups: group size {} must be positive and divide the world size {}", groupSize,
        world));
  }
  std::vector<std::vector<int>> lists;
  for (int start = 0; start < world; start += groupSize) {
    std::vector<int> l;
    for (int r = start; r < start + groupSize; ++r) l.push_back(r);
    lists.push_back(l);
  }
  return newSubgroupsByEnumeration(lists, options);
}

int getGroupRank(const ProcessGroupPtr& group, int globalRank) {
  return orDefault(group)->groupRankOf(globalRank);
}

int getGlobalRank(const ProcessGroupPtr& group, int groupRank) {
  return orDefault(group)->globalRankOf(groupRank);
}

std::vector<int> getProcessGroupRanks(const ProcessGroupPtr& group) {
  return orDefault(group)->globalRanks();
}

}  // namespace distlab::comm
