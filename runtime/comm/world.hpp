#pragma once
// Internal: the per-process (or per-thread, see ThreadWorldScope) state behind
// the module-level API in group_management.hpp, and rendezvous from a URL.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/process_group.hpp"

namespace distlab::comm::detail {

struct World {
  ProcessGroupPtr defaultGroup;
  std::vector<ProcessGroupPtr> groups;  // created by newGroup/newSubgroups, in order
  std::shared_ptr<Store> store;
  int worldSize = 0;
  int globalRank = -1;
  std::string backendSpec;
  Milliseconds timeout = kDefaultProcessGroupTimeout;
  std::map<std::string, std::string> backendOptions;
  RuntimeEnv env;  // initProcessGroup's read, for every group of this world
  int generation = 0;  // initProcessGroup count: keeps group names unique across re-inits
  int groupCounter = 0;
  std::map<std::string, int> localCounters;  // useLocalSynchronization names per rank set
};

World& currentWorld();


struct Rendezvous {
  std::shared_ptr<Store> store;
  int rank = -1;
  int worldSize = -1;
};
// "env://", "tcp://host:port", "file:///path" -> store, rank, world size (rank and
// worldSize override what the URL/environment say when >= 0; `env` is the
// caller's read of the environment).
Rendezvous rendezvous(const std::string& url, int rank, int worldSize, Milliseconds timeout,
                      const RuntimeEnv& env);

}  // namespace distlab::comm::detail
