#pragma once
// Options of fullyShard (PyTorch: fully_shard's keyword arguments, the
// MixedPrecisionPolicy and OffloadPolicy dataclasses), defaults in-line.
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "runtime/comm/device_mesh.hpp"
#include "runtime/dtensor/placement.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::fsdp {

struct MixedPrecisionPolicy {
  // All-gather and compute dtype of the unsharded parameters (unset: the
  // parameter's own dtype). Sharded parameters and optimizer state keep theirs.
  std::optional<DType> paramDtype;
  // Dtype of the gradient reduction (unset: paramDtype, else the param's dtype).
  std::optional<DType> reduceDtype;
  // Floating outputs of the module's forward are cast to this (unset: no cast).
  std::optional<DType> outputDtype;
  // Cast floating forward inputs to paramDtype (differentiably).
  bool castForwardInputs = true;
};

// CPU offload keeps sharded parameters, gradients and optimizer state in host
// memory. distlab's meshes are "cpu" or "cuda"; on a "cpu" mesh everything
// already lives on the host, so the policy is accepted and changes nothing.
struct OffloadPolicy {
  bool cpuOffload = false;
  bool pinMemory = true;
};

// Returns the placement for a parameter (by FQN), or nullopt for Shard(0).
using ShardPlacementFn =
    std::function<std::optional<dtensor::Placement>(const std::string& fqn, const Tensor& param)>;

// reshard_after_forward: true, false, or an int N that divides the shard
// world W: the world size to reshard to after forward (1 == false, W == true;
// otherwise each rank keeps 1/N of the unsharded parameters and backward
// all-gathers within groups of N consecutive ranks: Note [Resharding to a
// smaller world]). Unset: false for the root module, true for the others.
using ReshardAfterForward = std::variant<bool, int>;

struct FullyShardOptions {
  // 1-D: FSDP over that group; 2-D: HSDP (dim 0 replicates, dim 1 shards).
  // Unset: a 1-D mesh over the default process group.
  std::optional<comm::DeviceMesh> mesh;
  std::optional<ReshardAfterForward> reshardAfterForward;
  ShardPlacementFn shardPlacementFn;
  MixedPrecisionPolicy mpPolicy;
  OffloadPolicy offloadPolicy;
  // Left as they are (not sharded, no gradient reduction); by tensor identity.
  std::vector<Tensor> ignoredParams;
};

}  // namespace distlab::fsdp
