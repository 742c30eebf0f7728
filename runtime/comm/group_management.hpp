#pragma once
// The torch.distributed module-level API: init_process_group,
// destroy_process_group, get_rank/get_world_size, new_group, new_subgroups,
// rank translation. (Semantics: docs/pytorch-semantics.md, "Initialization"
// and "Groups and rank translation".)
//
// State ("the world": default group + every group created since init) is per
// process. Tests that run several ranks as threads of one process give each
// thread its own world with ThreadWorldScope.
//
// Group creation is collective over the whole world and must happen in the same
// order everywhere (Note [Issue order]), except newGroup with
// useLocalSynchronization, where only members call in. Initialization is not
// thread-safe (as PyTorch): create groups from one thread.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/comm/process_group.hpp"
#include "runtime/comm/store/store.hpp"

namespace distlab::comm {

struct InitOptions {
  // "shm", "gloo", "cpu:shm,cuda:nccl", ...; empty: gloo when registered, else shm
  // (PyTorch: gloo for cpu).
  std::string backend;
  // "env://" (default when neither initMethod nor store), "tcp://host:port",
  // "file:///path"; mutually exclusive with `store`.
  std::string initMethod;
  std::shared_ptr<Store> store;
  int worldSize = -1;  // required with `store`
  int rank = -1;       // required with `store`
  Milliseconds timeout = kUnsetTimeout;  // kUnset: 30 min (10 min for nccl)
  std::string groupDesc = "default_pg";
  std::map<std::string, std::string> backendOptions;  // BackendContext::options
};

// Blocks until all ranks joined. Throws ValueError for bad arguments (both
// store and initMethod, missing rank/world size, rank out of range, already
// initialized), DistStoreError/DistTimeoutError when peers do not show up.
ProcessGroupPtr initProcessGroup(const InitOptions& options = {});
bool isInitialized();
// group == nullptr destroys every group and the default group (then
// isInitialized() is false); otherwise only that group. Shuts backends down.
void destroyProcessGroup(const ProcessGroupPtr& group = nullptr);
// The default group; throws Error "Default process group has not been
// initialized, please make sure to call initProcessGroup" when none.
ProcessGroupPtr defaultGroup();

// -1 when this process is not in `group` (nullptr = default group).
int getRank(const ProcessGroupPtr& group = nullptr);
int getWorldSize(const ProcessGroupPtr& group = nullptr);
// Lowercase backend name; the caller must be a member of `group`.
std::string getBackend(const ProcessGroupPtr& group = nullptr);

struct NewGroupOptions {
  std::vector<int> ranks;               // global ranks; empty = all
  Milliseconds timeout = kUnsetTimeout; // kUnset: the default group's
  std::string backend;                  // empty: the default group's
  bool useLocalSynchronization = false; // only members call; group-local barrier
  std::string groupDesc;
  std::map<std::string, std::string> backendOptions;
};
// Members get the group, everyone else a non-member handle (isMember() false).
ProcessGroupPtr newGroup(const NewGroupOptions& options = {});

// Splits the world into consecutive groups of `groupSize` (default: the
// number of ranks on this node, i.e. the whole world here). Returns (my group,
// all groups). Throws ValueError when groupSize does not divide the world size.
std::pair<ProcessGroupPtr, std::vector<ProcessGroupPtr>> newSubgroups(
    int groupSize = -1, const NewGroupOptions& options = {});
// One group per list of global ranks (lists must be disjoint).
std::pair<ProcessGroupPtr, std::vector<ProcessGroupPtr>> newSubgroupsByEnumeration(
    const std::vector<std::vector<int>>& rankLists, const NewGroupOptions& options = {});

// Rank translation (PyTorch get_group_rank / get_global_rank /
// get_process_group_ranks). Non-member ranks -> Error.
int getGroupRank(const ProcessGroupPtr& group, int globalRank);
int getGlobalRank(const ProcessGroupPtr& group, int groupRank);
std::vector<int> getProcessGroupRanks(const ProcessGroupPtr& group = nullptr);

// Gives the calling thread its own world for its lifetime (multi-rank tests in
// threads). Nested scopes are not supported.
class ThreadWorldScope {
 public:
  ThreadWorldScope();
  ~ThreadWorldScope();
  ThreadWorldScope(const ThreadWorldScope&) = delete;
  ThreadWorldScope& operator=(const ThreadWorldScope&) = delete;
};

}  // namespace distlab::comm
