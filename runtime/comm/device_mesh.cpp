#include "runtime/comm/device_mesh.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "runtime/comm/group_management.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {
namespace {

int64_t product(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * shape[d + 1];
  }
  return strides;
}

void checkDeviceType(const std::string& deviceType) {
  if (deviceType.find(':') != std::string::npos) {
    throw ValueError(fmt::format("DeviceMesh: device type '{}' must not contain a device index "
                                 "(use \"cuda\", not \"cuda:0\")",
                                 deviceType));
  }
  if (deviceType != "cpu" && deviceType != "cuda") {
    throw ValueError(fmt::format("DeviceMesh: unknown device type '{}' (valid: cpu, cuda)",
                                 deviceType));
  }
}

}  // namespace

DeviceMesh::DeviceMesh(std::string deviceType, std::vector<int64_t> shape, std::vector<int> mesh,
                       std::vector<std::string> dimNames)
    : deviceType_(std::move(deviceType)),
      shape_(std::move(shape)),
      mesh_(std::move(mesh)),
      dimNames_(std::move(dimNames)) {
  validate();
  globalRank_ = comm::getRank();
  const auto strides = stridesOf(shape_);
  // For each dim, every slice along it is one group; enumerate slices in a
  // fixed order so all ranks create groups identically.
  for (int d = 0; d < ndim(); ++d) {
    ProcessGroupPtr mine;
    for (int64_t base = 0; base < size(); ++base) {
      if ((base / strides[d]) % shape_[d] != 0) continue;  // not the first of its slice
      std::vector<int> ranks;
      for (int64_t i = 0; i < shape_[d]; ++i) ranks.push_back(mesh_[base + i * strides[d]]);
      if (!std::is_sorted(ranks.begin(), ranks.end())) {
        throw ValueError("DeviceMesh: each slice's ranks must be ascending in this version");
      }
      NewGroupOptions opts;
      opts.ranks = ranks;
      opts.groupDesc = dimNames_.empty() ? fmt::format("mesh_dim{}", d) : dimNames_[d];
      auto g = newGroup(opts);
      if (g->isMember()) mine = g;
    }
    groups_.push_back(mine ? mine : ProcessGroup::nonMember("mesh_dim_nonmember", {}));
  }
}

DeviceMesh DeviceMesh::fromGroups(std::vector<ProcessGroupPtr> groups, std::string deviceType,
                                  std::vector<int64_t> shape, std::vector<int> mesh,
                                  std::vector<std::string> dimNames) {
  if (groups.empty()) throw ValueError("DeviceMesh::fromGroups: no groups given");
  DeviceMesh m;
  m.deviceType_ = std::move(deviceType);
  if (groups.size() == 1 && shape.empty()) {
    m.mesh_ = groups[0]->globalRanks();
    m.shape_ = {static_cast<int64_t>(m.mesh_.size())};
  } else {
    if (shape.empty() || mesh.empty() || dimNames.empty()) {
      throw ValueError("DeviceMesh::fromGroups: with more than one group, shape, mesh and "
                       "dimNames are required");
    }
    m.shape_ = std::move(shape);
    m.mesh_ = std::move(mesh);
  }
  m.dimNames_ = std::move(dimNames);
  if (static_cast<int>(groups.size()) != m.ndim()) {
    throw ValueError(fmt::format("DeviceMesh::fromGroups: {} groups for a {}-D mesh",
                                 groups.size(), m.ndim()));
  }
  m.validate();
  m.groups_ = std::move(groups);
  m.globalRank_ = comm::getRank();
  return m;
}

void DeviceMesh::validate() const {
  checkDeviceType(deviceType_);
  if (shape_.empty()) throw ValueError("DeviceMesh: the mesh shape is empty");
  for (int64_t s : shape_) {
    if (s <= 0) throw ValueError(fmt::format("DeviceMesh: mesh dimension size {} is not positive", s));
  }
  if (product(shape_) != static_cast<int64_t>(mesh_.size())) {
    throw ValueError(fmt::format("DeviceMesh: shape has {} entries but the mesh lists {} ranks",
                                 product(shape_), mesh_.size()));
  }
  if (!dimNames_.empty()) {
    if (dimNames_.size() != shape_.size()) {
      throw ValueError(fmt::format("DeviceMesh: {} dim names for a {}-D mesh", dimNames_.size(),
                                   shape_.size()));
    }
    if (std::set<std::string>(dimNames_.begin(), dimNames_.end()).size() != dimNames_.size()) {
      throw ValueError(fmt::format("DeviceMesh: dim names [{}] must be unique",
                                   fmt::join(dimNames_, ", ")));
    }
  }
  if (std::set<int>(mesh_.begin(), mesh_.end()).size() != mesh_.size()) {
    throw ValueError("DeviceMesh: the mesh lists a rank more than once");
  }
}

int DeviceMesh::dimIndex(const std::string& name) const {
  auto it = std::find(dimNames_.begin(), dimNames_.end(), name);
  if (it == dimNames_.end()) {
    throw ValueError(fmt::format("DeviceMesh: no dimension named '{}' (names: [{}])", name,
                                 fmt::join(dimNames_, ", ")));
  }
  return static_cast<int>(it - dimNames_.begin());
}

ProcessGroupPtr DeviceMesh::getGroup(std::optional<int> dim) const {
  if (!dim) {
    if (ndim() != 1) {
      throw ValueError(fmt::format(
          "DeviceMesh::getGroup: the mesh is {}-D; specify mesh_dim", ndim()));
    }
    dim = 0;
  }
  if (*dim < 0 || *dim >= ndim()) {
    throw ValueError(fmt::format("DeviceMesh::getGroup: dim {} out of range for a {}-D mesh",
                                 *dim, ndim()));
  }
  return groups_[*dim];
}

ProcessGroupPtr DeviceMesh::getGroup(const std::string& dimName) const {
  return getGroup(dimIndex(dimName));
}

int DeviceMesh::getLocalRank(std::optional<int> dim) const { return getGroup(dim)->rank(); }
int DeviceMesh::getLocalRank(const std::string& dimName) const {
  return getLocalRank(dimIndex(dimName));
}

std::optional<std::vector<int64_t>> DeviceMesh::getCoordinate() const {
  auto it = std::find(mesh_.begin(), mesh_.end(), globalRank_);
  if (it == mesh_.end()) return std::nullopt;
  int64_t index = it - mesh_.begin();
  const auto strides = stridesOf(shape_);
  std::vector<int64_t> coord(shape_.size());
  for (size_t d = 0; d < shape_.size(); ++d) {
    coord[d] = index / strides[d];
    index %= strides[d];
  }
  return coord;
}

DeviceMesh initDeviceMesh(const std::string& deviceType, std::vector<int64_t> shape,
                          std::vector<std::string> dimNames) {
  const int64_t n = product(shape);
  if (n != getWorldSize()) {
    throw ValueError(fmt::format("initDeviceMesh: mesh shape has {} ranks but the world size is {}",
                                 n, getWorldSize()));
  }
  std::vector<int> mesh(n);
  std::iota(mesh.begin(), mesh.end(), 0);
  return DeviceMesh(deviceType, std::move(shape), std::move(mesh), std::move(dimNames));
}

}  // namespace distlab::comm
