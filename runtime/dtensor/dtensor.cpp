#include "runtime/dtensor/dtensor.hpp"

#include <set>
#include <utility>

#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::dtensor {
namespace {

void validate(const comm::DeviceMesh& mesh, const Placements& placements, const Shape& shape) {
  DL_CHECK_T(ValueError, static_cast<int>(placements.size()) == mesh.ndim(), "DTensor: ",
             placements.size(), " placements for a ", mesh.ndim(), "-D mesh; give one per mesh dim");
  std::set<int64_t> sharded;
  for (const Placement& p : placements) {
    if (!p.isShard()) continue;
    DL_CHECK_T(ValueError, p.dim >= 0 && p.dim < static_cast<int64_t>(shape.size()), "DTensor: ",
               p.str(), " does not fit a tensor of shape ", shapeToString(shape));
    DL_CHECK_T(ValueError, sharded.insert(p.dim).second, "DTensor: tensor dim ", p.dim,
               " is sharded by two mesh dims; only one Shard per tensor dim is supported");
  }
}

std::vector<int64_t> myCoordinate(const comm::DeviceMesh& mesh) {
  auto coord = mesh.getCoordinate();
  DL_CHECK_T(ValueError, coord.has_value(), "DTensor: rank ", mesh.getRank(),
             " is not part of the device mesh");
  return *coord;
}

// All-gathers `local` (this rank's Shard(dim) part on mesh dim `meshDim`)
// into the tensor with dim `dim` of size `size`.
Tensor gatherDim(const Tensor& local, const comm::DeviceMesh& mesh, int meshDim, int64_t dim,
                 int64_t size) {
  const int world = static_cast<int>(mesh.shape()[meshDim]);
  const int64_t chunk = chunkLength(size, world);
  Shape padded = local.sizes();
  padded[dim] = chunk;
  Tensor in = zeros(padded, local.options().withRequiresGrad(false));
  if (local.size(dim) > 0) in.narrow(dim, 0, local.size(dim)).copy_(local);
  Shape outShape = padded;
  outShape.insert(outShape.begin(), world);
  Tensor out = empty(outShape, in.options());
  mesh.getGroup(meshDim)->allgatherIntoTensor(out, in)->wait();
  std::vector<Tensor> parts;
  for (int r = 0; r < world; ++r) parts.push_back(out.select(0, r));
  return cat(parts, dim).narrow(dim, 0, size).contiguous();
}

}  // namespace

DTensor::DTensor(Tensor local, comm::DeviceMesh mesh, Placements placements, Shape globalShape)
    : local_(std::move(local)),
      mesh_(std::move(mesh)),
      placements_(std::move(placements)),
      globalShape_(std::move(globalShape)) {}

Tensor localPart(const Tensor& full, const comm::DeviceMesh& mesh, const Placements& placements,
                 const std::vector<int64_t>& coord) {
  Tensor part = full;
  for (size_t m = 0; m < placements.size(); ++m) {
    if (!placements[m].isShard()) continue;
    const int64_t d = placements[m].dim;
    ShardSpan s = shardSpan(full.size(d), static_cast<int>(mesh.shape()[m]),
                            static_cast<int>(coord[m]));
    part = part.narrow(d, s.offset, s.length);
  }
  return part;
}

DTensor DTensor::distribute(const Tensor& full, const comm::DeviceMesh& mesh,
                            Placements placements) {
  validate(mesh, placements, full.sizes());
  Tensor local = localPart(full, mesh, placements, myCoordinate(mesh)).detach().clone();
  return DTensor(std::move(local), mesh, std::move(placements), full.sizes());
}

DTensor DTensor::fromLocal(Tensor local, const comm::DeviceMesh& mesh, Placements placements,
                           Shape globalShape) {
  validate(mesh, placements, globalShape);
  Shape expected = globalShape;
  const std::vector<int64_t> coord = myCoordinate(mesh);
  for (size_t m = 0; m < placements.size(); ++m) {
    if (!placements[m].isShard()) continue;
    const int64_t d = placements[m].dim;
    expected[d] = shardSpan(globalShape[d], static_cast<int>(mesh.shape()[m]),
                            static_cast<int>(coord[m])).length;
  }
  DL_CHECK_T(ValueError, local.sizes() == expected, "DTensor.from_local: the local tensor has shape ",
             shapeToString(local.sizes()), " but this rank's part of ", shapeToString(globalShape),
             " is ", shapeToString(expected));
  return DTensor(std::move(local), mesh, std::move(placements), std::move(globalShape));
}

ShardSpan DTensor::localSpan(int64_t dim) const {
  const std::vector<int64_t> coord = myCoordinate(mesh_);
  for (size_t m = 0; m < placements_.size(); ++m) {
    if (placements_[m].isShard() && placements_[m].dim == dim) {
      return shardSpan(globalShape_[dim], static_cast<int>(mesh_.shape()[m]),
                       static_cast<int>(coord[m]));
    }
  }
  return {0, globalShape_[dim]};
}

Tensor DTensor::fullTensor() const { return redistribute(Placements(placements_.size(),
                                                                    Placement::replicate())).local_; }

DTensor DTensor::redistribute(const Placements& placements) const {
  validate(mesh_, placements, globalShape_);
  Tensor current = local_.detach();
  Placements now = placements_;
  for (size_t m = 0; m < now.size(); ++m) {  // gather what is sharded differently
    if (now[m].isShard() && now[m] != placements[m]) {
      current = gatherDim(current, mesh_, static_cast<int>(m), now[m].dim, globalShape_[now[m].dim]);
      now[m] = Placement::replicate();
    }
  }
  const std::vector<int64_t> coord = myCoordinate(mesh_);
  for (size_t m = 0; m < now.size(); ++m) {  // then cut the new shards locally
    if (placements[m].isShard() && now[m].isReplicate()) {
      const int64_t d = placements[m].dim;
      ShardSpan s = shardSpan(globalShape_[d], static_cast<int>(mesh_.shape()[m]),
                              static_cast<int>(coord[m]));
      current = current.narrow(d, s.offset, s.length).contiguous();
      now[m] = placements[m];
    }
  }
  if (current.isSame(local_) || current.sharesStorageWith(local_)) current = current.clone();
  return DTensor(current, mesh_, placements, globalShape_);
}

}  // namespace distlab::dtensor
