#pragma once
// FSDP state dicts (PyTorch: model.state_dict() after fully_shard, DTensor
// full_tensor, and a distributed-checkpoint-like directory format).
//
// A sharded state dict maps each FQN of the root module's stateDict() (FQNs as
// before sharding; for a root made from a list, fullyShard({m1, m2}), the
// entries of every module as "modules[i].<fqn>", see rootStateDict) to a DTensor: FSDP parameters with their shard placement,
// everything else (buffers, ignored parameters) Replicate. Building it needs no
// communication; the DTensors' locals share storage with the module.
//
// Directory format (saveShardedStateDict): `rank<r>.bin` per rank with that
// rank's locals, and `metadata.txt` (written by rank 0) with one line per entry:
// FQN, dtype, global shape, sharded dim (-1: replicated) and the saving world
// size. loadShardedStateDict reads it at any world size: each rank copies the
// rows of its own span out of the files whose spans overlap it.
#include <string>
#include <utility>
#include <vector>

#include "runtime/dtensor/dtensor.hpp"
#include "runtime/fsdp/fully_shard.hpp"
#include "runtime/nn/state_dict.hpp"
#include "runtime/optim/optimizer.hpp"

namespace distlab::fsdp {

using ShardedStateDict = std::vector<std::pair<std::string, dtensor::DTensor>>;

// The state entries / parameters of `root`'s modules: one module: its own
// stateDict() / namedParameters(); a list group: each module's, in list order,
// prefixed "modules[i]." (the names fullyShard's messages use). Note [State
// dicts of list groups] in fsdp_state_dict.cpp.
nn::StateDict rootStateDict(const FSDPModule& root);
nn::NamedTensors rootNamedParameters(const FSDPModule& root);

ShardedStateDict shardedStateDict(FSDPModule& root);
// Full tensors (collective: every rank of the mesh calls it); the result is
// filled on `rank` only (the others get an empty dict).
nn::StateDict fullStateDict(FSDPModule& root, int rank = 0);
// Copies values into the module's shards and buffers (no communication).
// ValueError naming the FQN on a missing or unexpected key, or a global shape,
// dtype or placement that differs ("a state dict from another model").
void loadShardedStateDict(FSDPModule& root, const ShardedStateDict& state);

// Creates `directory` when missing. Ranks of the first replica write
// `rank<shard rank>.bin`, rank 0 the
// metadata; with `optimizer`, its per-parameter state is saved alongside as
// "optim.<fqn>.<buffer>" (sharded like the parameter) and "optim.<fqn>.step".
// Collective over the default group (a barrier before returning, so the
// directory is complete on every rank's return). Error naming the file on I/O
// failure.
void saveShardedStateDict(FSDPModule& root, const std::string& directory,
                          const optim::Optimizer* optimizer = nullptr);
// Loads a directory written at any world size into `root` (and `optimizer`'s
// state, when given). ValueError naming the FQN when the checkpoint is from
// another model (missing entry, other shape or dtype).
void loadShardedStateDictFromDir(FSDPModule& root, const std::string& directory,
                                 optim::Optimizer* optimizer = nullptr);

}  // namespace distlab::fsdp
