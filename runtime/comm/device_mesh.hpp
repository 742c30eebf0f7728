#pragma once
// DeviceMesh: an n-D arrangement of global ranks with one process group per
// mesh dimension (docs/pytorch-semantics.md, "Device meshes"). For a mesh
// [[0,1,2,3],[4,5,6,7]], dim 0 groups are the columns (0,4)...(3,7) and dim 1
// groups the rows.
//
// Construction is collective over the world (every rank creates the groups of
// every slice, in the same order); the mesh must be identical on all ranks.
#include <optional>
#include <string>
#include <vector>

#include "runtime/comm/process_group.hpp"

namespace distlab::comm {

class DeviceMesh {
 public:
  // `mesh` lists global ranks in row-major order for `shape`. Names, when given,
  // are unique and one per dimension. Creates the per-dimension groups through
  // newGroup (the default group must exist).
  DeviceMesh(std::string deviceType, std::vector<int64_t> shape, std::vector<int> mesh,
             std::vector<std::string> dimNames = {});
  // From existing groups, one per dimension (1 group: 1-D mesh of its ranks;
  // more: `shape`, `mesh` and `dimNames` required, groups in dimension order).
  static DeviceMesh fromGroups(std::vector<ProcessGroupPtr> groups, std::string deviceType,
                               std::vector<int64_t> shape = {}, std::vector<int> mesh = {},
                               std::vector<std::string> dimNames = {});

  const std::string& deviceType() const { return deviceType_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int>& mesh() const { return mesh_; }
  const std::vector<std::string>& dimNames() const { return dimNames_; }
  int size() const { return static_cast<int>(mesh_.size()); }

  // `dim` by index or name; nullopt allowed only for a 1-D mesh.
  ProcessGroupPtr getGroup(std::optional<int> dim = std::nullopt) const;
  ProcessGroupPtr getGroup(const std::string& dimName) const;
  std::vector<ProcessGroupPtr> getAllGroups() const { return groups_; }
  // This rank's index along `dim` (its rank in that dim's group).
  int getLocalRank(std::optional<int> dim = std::nullopt) const;
  int getLocalRank(const std::string& dimName) const;
  // This rank's coordinate per dim; nullopt when it is not in the mesh.
  std::optional<std::vector<int64_t>> getCoordinate() const;
  int getRank() const { return globalRank_; }
  int dimIndex(const std::string& name) const;  // ValueError listing the names

 private:
  DeviceMesh() = default;
  void validate() const;

  std::string deviceType_;
  std::vector<int64_t> shape_;
  std::vector<int> mesh_;
  std::vector<std::string> dimNames_;
  std::vector<ProcessGroupPtr> groups_;  // per dim; non-member handles when outside
  int globalRank_ = -1;
};

// init_device_mesh: mesh = 0..prod(shape)-1 in row-major order. `deviceType` is
// "cpu" or "cuda" (an index such as "cuda:0" is a ValueError).
DeviceMesh initDeviceMesh(const std::string& deviceType, std::vector<int64_t> shape,
                          std::vector<std::string> dimNames = {});

}  // namespace distlab::comm
