#pragma once
// FSDP state dicts (PyTorch: model.state_dict() after fully_shard, DTensor
// full_tensor, and a distributed-checkpoint-like directory format).
//
// A sharded state dict maps each FQN of the root module's stateDict() (FQNs as
// before sharding) to a DTensor: FSDP parameters with their shard placement,
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

namespace distlab::fsdp {

using ShardedStateDict = std::vector<std::pair<std::string, dtensor::DTensor>>;

ShardedStateDict shardedStateDict(FSDPModule& root);
// Full tensors (collective: every rank of the mesh calls it); the result is
// filled on `rank` only (the others get an empty dict).
nn::StateDict fullStateDict(FSDPModule& root, int rank = 0);
// Copies values into the module's shards and buffers (no communication).
// ValueError naming the FQN on a missing or unexpected key, or a global shape,
// dtype or placement that differs ("a state dict from another model").
void loadShardedStateDict(FSDPModule& root, const ShardedStateDict& state);

// Every rank writes its file; rank 0 the metadata. Collective (a barrier on the
// shard group orders the writes before anyone returns).
void saveShardedStateDict(FSDPModule& root, const std::string& directory);
// Loads a directory written at any world size into `root` (same model).
void loadShardedStateDictFromDir(FSDPModule& root, const std::string& directory);

}  // namespace distlab::fsdp
