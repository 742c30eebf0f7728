#pragma once
// DTensor: a rank's local part of a global tensor laid out over a DeviceMesh,
// with one Placement per mesh dimension (PyTorch: torch.distributed.tensor).
// This is the sharded-parameter type of FSDP and of sharded state dicts.
//
// Supported layouts: any mix of Replicate() and Shard(d) over the mesh
// dimensions, with at most one mesh dimension sharding a given tensor dim.
// Shard(d) follows Note [Chunked sharding] (placement.hpp): local parts are
// unpadded (a trailing rank's part may be empty); collectives pad internally.
//
// Collective methods (fullTensor, redistribute to Replicate) must be called by
// every rank of the mesh dims involved, in the same order; they block until
// done and throw the group's error (its timeout applies). Construction,
// toLocal() and redistribute to Shard are local.
// Thread-safety: a value type; not for concurrent mutation.
#include <vector>

#include "runtime/comm/device_mesh.hpp"
#include "runtime/dtensor/placement.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::dtensor {

using Placements = std::vector<Placement>;

class DTensor {
 public:
  // From a tensor identical on every rank (PyTorch: distribute_tensor): each
  // rank keeps its part (a contiguous copy). No communication.
  static DTensor distribute(const Tensor& full, const comm::DeviceMesh& mesh,
                            Placements placements);
  // From this rank's local part (PyTorch: DTensor.from_local with shape given).
  // ValueError when the local shape is not this rank's part of `globalShape`.
  static DTensor fromLocal(Tensor local, const comm::DeviceMesh& mesh, Placements placements,
                           Shape globalShape);

  const Tensor& toLocal() const { return local_; }
  const Shape& shape() const { return globalShape_; }
  const Placements& placements() const { return placements_; }
  const comm::DeviceMesh& mesh() const { return mesh_; }
  DType dtype() const { return local_.dtype(); }

  // The global tensor on every rank (all-gathers over every sharded mesh dim).
  Tensor fullTensor() const;
  // Same global tensor, new placements: Shard -> Replicate all-gathers,
  // Replicate -> Shard keeps the local chunk, Shard(a) -> Shard(b) does both.
  DTensor redistribute(const Placements& placements) const;

  // This rank's span along tensor dim `dim` (whole dim when not sharded).
  ShardSpan localSpan(int64_t dim) const;

 private:
  DTensor(Tensor local, comm::DeviceMesh mesh, Placements placements, Shape globalShape);

  Tensor local_;
  comm::DeviceMesh mesh_;
  Placements placements_;
  Shape globalShape_;
};

// The part of `full` that rank coordinate `coord` holds under `placements`
// (a view of `full`). Shared by DTensor and FSDP's copy-in/out.
Tensor localPart(const Tensor& full, const comm::DeviceMesh& mesh, const Placements& placements,
                 const std::vector<int64_t>& coord);

}  // namespace distlab::dtensor
