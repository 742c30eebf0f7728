#pragma once
// FSDPParam: one parameter under FSDP (PyTorch: FSDPParam) -- its sharded
// storage, its unsharded tensor, and the copy-in/copy-out views that the group
// collectives use.
//
// Note [FSDP parameter storage]
// The sharded parameter is a leaf tensor viewing the first `localNumel` entries
// of a zero-padded flat buffer of `chunkNumel` entries (Note [Chunked sharding]),
// so the all-gather input is the padded buffer and the optimizer updates the
// leaf in place without touching the padding. The unsharded parameter is one
// leaf tensor that lives for the whole run: its storage is released when
// resharded and reallocated before the next all-gather copies out into it
// (Note [Freeing storage in place]), so autograd nodes that saved it in forward
// see the re-gathered values in backward, and its AccumulateGrad is stable.
// Owners' module parameters point at the sharded leaf while resharded and at the
// unsharded leaf while unsharded (Module::setParameter).
//
// Note [CPU offload]
// With OffloadPolicy::cpuOffload and a parameter on a CUDA device (PyTorch:
// CPUOffloadPolicy), the padded shard -- hence the sharded leaf, the
// optimizer's parameter and its state -- lives in host memory (page-locked
// when pinMemory), while the unsharded parameter stays on the parameter's
// device, where the module computes. Copy-in copies host -> device into the
// group's device buffer before the all-gather; the reduce-scattered gradient
// is copied device -> host (toShardDevice) before it becomes the sharded
// `.grad`, so the optimizer steps on the CPU. On a CPU parameter the policy
// changes nothing: everything is already on the host.
#include <string>
#include <vector>

#include "runtime/comm/device_mesh.hpp"
#include "runtime/dtensor/dtensor.hpp"
#include "runtime/fsdp/fsdp_options.hpp"
#include "runtime/nn/module.hpp"

namespace distlab::fsdp {

struct ParamOwner {
  nn::Module* module = nullptr;
  std::string name;  // local name in `module`
};

class FSDPParam {
 public:
  // `original` is the module's current parameter (identical on all ranks).
  // `mesh` is the FSDP mesh (HSDP: the sharding is along its dim 1).
  FSDPParam(std::string fqn, std::vector<ParamOwner> owners, const Tensor& original,
            const comm::DeviceMesh& mesh, dtensor::Placement placement, DType unshardedDtype,
            const OffloadPolicy& offload = {});

  const std::string& fqn() const { return fqn_; }
  const Tensor& sharded() const { return sharded_; }  // the optimizer's parameter
  const Tensor& unsharded() const { return unsharded_; }
  dtensor::DTensor shardedDTensor() const;
  dtensor::Placement placement() const { return placement_; }
  const Shape& shape() const { return shape_; }
  bool requiresGrad() const { return requiresGrad_; }
  // True when `t` is the tensor this parameter was made from (shared weights:
  // another module still holds it). Keeps no reference to it.
  bool madeFrom(const Tensor& t) const;
  int64_t chunkNumel() const { return chunkNumel_; }  // all-gather input entries
  int64_t localNumel() const { return sharded_.numel(); }

  // Copy-in: this rank's padded shard into `dst` (1-D, chunkNumel, any dtype).
  void copyIn(const Tensor& dst) const;
  // Copy-out: from the gathered [world, total] buffer at column `offset`;
  // `world` is the shard world, or the smaller post-forward world whose rows
  // hold chunks of that world's split (Note [Resharding to a smaller world]).
  void copyOut(const Tensor& gathered, int64_t offset, int world);
  // Entries of one chunk when split over `world` ranks (padded).
  int64_t chunkNumelFor(int world) const;
  // Post-forward copy-in: chunk `rank` of the unsharded parameter split over
  // `world` into `dst` (1-D, chunkNumelFor(world) entries, zero padding).
  void copyInUnsharded(const Tensor& dst, int world, int rank) const;
  // Gradient copy-in: `grad` (unsharded shape) into the [world, total] buffer.
  void gradCopyIn(const Tensor& grad, const Tensor& buffer, int64_t offset) const;
  // This rank's gradient from the reduced [total] buffer (a view, sharded shape).
  Tensor shardedGradView(const Tensor& reduced, int64_t offset) const;
  // `grad` in the sharded parameter's dtype on its device: itself when it is
  // already there, else a copy (Note [CPU offload]: pinned host memory).
  Tensor toShardDevice(const Tensor& grad) const;
  bool offloaded() const { return offloaded_; }  // Note [CPU offload]

  void allocateUnsharded();  // no-op when allocated
  void freeUnsharded();      // no-op when free
  bool unshardedAllocated() const { return !unsharded_.storage()->isReleased(); }
  void useSharded();    // owners' parameters -> sharded leaf
  void useUnsharded();  // owners' parameters -> unsharded leaf
  size_t unshardedBytes() const { return static_cast<size_t>(unsharded_.numel()) * unsharded_.elementSize(); }
  size_t shardedBytes() const { return paddedShard_.nbytes(); }

 private:
  int shardWorld() const;
  int shardRank() const;
  // Rank r's block of `full` (a view) and its flat piece of a [world, total]
  // buffer, for the split over `world` ranks.
  Tensor block(const Tensor& full, int r, int world) const;
  Tensor piece(const Tensor& buffer, int r, int64_t offset, int world) const;

  std::string fqn_;
  std::vector<ParamOwner> owners_;
  // Identity of the tensor the module held before sharding, without keeping it.
  const TensorImpl* originalImpl_;
  std::weak_ptr<Storage> originalStorage_;
  comm::DeviceMesh mesh_;
  dtensor::Placement placement_;
  Shape shape_;
  bool requiresGrad_;
  bool offloaded_ = false;  // shard in host memory, unsharded on the device
  bool pinHost_ = false;
  int64_t chunkNumel_ = 0;
  Tensor paddedShard_;  // 1-D, chunkNumel_, the param's dtype
  Tensor sharded_;      // leaf view of paddedShard_
  Tensor unsharded_;    // leaf, full shape, unsharded dtype
};

}  // namespace distlab::fsdp
