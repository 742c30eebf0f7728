#pragma once
// Internal to runtime/fsdp: the state shared by the FSDP modules of one root
// and the hook installation (fsdp_hooks.cpp).
#include <map>
#include <memory>
#include <vector>

#include "runtime/fsdp/fully_shard.hpp"
#include "runtime/join/join.hpp"

namespace distlab::fsdp {

struct RootContext {
  std::vector<FSDPModule*> modules;            // pre-order, the root first
  std::vector<FSDPModule*> forwardOrder;       // pre-forward order of this step
  std::vector<FSDPModule*> lastForwardOrder;   // ... of the previous step
  std::vector<FSDPModule*> postForwardOrder;   // post-forward order of this step
  bool inBackward = false;                     // the end-of-backward callback is queued
  bool implicitForwardPrefetch = true;
  bool implicitBackwardPrefetch = true;
  bool isLastBackward = true;                  // setIsLastBackward
  std::map<int, comm::ProcessGroupPtr> postForwardGroups;  // by size (reshard to N)
  MemoryStats memory;
  // Under Join (FSDPJoinable): the record and the joinable whose vote the
  // root's pre-forward issues (Note [FSDP under Join] in fsdp_join.hpp).
  std::unique_ptr<JoinRecord> join;
  join::Joinable* joinable = nullptr;
};

// Registers the forward pre-hook, the forward hook and the post-accumulate
// multi-grad hook of `state`'s module and group.
void installHooks(const FSDPModulePtr& state);

}  // namespace distlab::fsdp
