#include "runtime/fsdp/fsdp_param.hpp"

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/check.hpp"
#include "distlab/config.hpp"
#include "runtime/core/errors.hpp"
#if DISTLAB_HAVE_CUDA
#include "runtime/tensor/cuda/cuda_allocator.hpp"
#endif

namespace distlab::fsdp {
namespace {

// Host memory for an offloaded shard or gradient (Note [CPU offload]).
Tensor hostEmpty(const Shape& shape, DType dtype, bool pin) {
#if DISTLAB_HAVE_CUDA
  if (pin) return cuda::pinnedEmpty(shape, dtype);
#else
  (void)pin;
#endif
  return empty(shape, TensorOptions{}.withDType(dtype));
}

}  // namespace

FSDPParam::FSDPParam(std::string fqn, std::vector<ParamOwner> owners, const Tensor& original,
                     const comm::DeviceMesh& mesh, dtensor::Placement placement,
                     DType unshardedDtype, const OffloadPolicy& offload)
    : fqn_(std::move(fqn)),
      owners_(std::move(owners)),
      originalImpl_(original.impl()),
      originalStorage_(original.storage()),
      mesh_(mesh),
      placement_(placement),
      shape_(original.sizes()),
      requiresGrad_(original.requiresGrad()),
      offloaded_(offload.cpuOffload && !original.device().isCpu()),
      pinHost_(offload.pinMemory) {
  DL_CHECK_T(ValueError, original.dim() > 0, "fully_shard: parameter '", fqn_,
             "' is 0-dimensional; FSDP shards parameters along a dimension");
  const int64_t d = placement_.dim;
  DL_CHECK_T(ValueError, d >= 0 && d < original.dim(), "fully_shard: shard_placement_fn gave ",
             placement_.str(), " for parameter '", fqn_, "' of shape ", shapeToString(shape_));
  DL_CHECK_T(ValueError, d == 0 || original.size(d) % shardWorld() == 0,
             "FSDP does not support uneven sharding on dim ", d, ": parameter '", fqn_,
             "' has shape ", shapeToString(shape_), " and the shard world size is ", shardWorld(),
             "; use a dim whose size the world size divides, or Shard(0)");
  autograd::NoGradGuard noGrad;
  const int64_t perEntry = original.numel() / std::max<int64_t>(1, original.size(d));
  chunkNumel_ = dtensor::chunkLength(original.size(d), shardWorld()) * perEntry;
  if (offloaded_) {
    paddedShard_ = hostEmpty({chunkNumel_}, original.dtype(), pinHost_);
    paddedShard_.zero_();
  } else {
    paddedShard_ = zeros({chunkNumel_}, original.options().withRequiresGrad(false));
  }
  Tensor local = block(original.detach(), shardRank(), shardWorld());
  Tensor view = paddedShard_.narrow(0, 0, local.numel()).view(local.sizes());
  view.copy_(local);
  sharded_ = view.detach();
  if (requiresGrad_) sharded_.setRequiresGrad(true);
  unsharded_ = empty(shape_, original.options().withDType(unshardedDtype).withRequiresGrad(false));
  if (requiresGrad_) unsharded_.setRequiresGrad(true);
  unsharded_.storage()->release();
  useSharded();
}

bool FSDPParam::madeFrom(const Tensor& t) const {
  auto storage = originalStorage_.lock();
  return storage && t.impl() == originalImpl_ && t.storage() == storage;
}

int FSDPParam::shardWorld() const { return static_cast<int>(mesh_.shape().back()); }
int FSDPParam::shardRank() const { return static_cast<int>(mesh_.getCoordinate()->back()); }

Tensor FSDPParam::block(const Tensor& full, int r, int world) const {
  dtensor::ShardSpan s = dtensor::shardSpan(full.size(placement_.dim), world, r);
  return full.narrow(placement_.dim, s.offset, s.length);
}

Tensor FSDPParam::piece(const Tensor& buffer, int r, int64_t offset, int world) const {
  Shape local = shape_;
  local[placement_.dim] = dtensor::shardSpan(shape_[placement_.dim], world, r).length;
  return buffer.select(0, r).narrow(0, offset, shapeNumel(local)).view(local);
}

int64_t FSDPParam::chunkNumelFor(int world) const {
  const int64_t rows = shape_[placement_.dim];
  return dtensor::chunkLength(rows, world) * (shapeNumel(shape_) / std::max<int64_t>(1, rows));
}

dtensor::DTensor FSDPParam::shardedDTensor() const {
  dtensor::Placements placements;
  if (mesh_.ndim() == 2) placements.push_back(dtensor::Placement::replicate());
  placements.push_back(placement_);
  return dtensor::DTensor::fromLocal(sharded_.detach(), mesh_, placements, shape_);
}

void FSDPParam::copyIn(const Tensor& dst) const {
  Tensor out = dst;
  out.copy_(paddedShard_);
}

void FSDPParam::copyOut(const Tensor& gathered, int64_t offset, int world) {
  for (int r = 0; r < world; ++r) {
    Tensor dst = block(unsharded_, r, world);
    dst.copy_(piece(gathered, r, offset, world));
  }
}

void FSDPParam::copyInUnsharded(const Tensor& dst, int world, int rank) const {
  Tensor out = dst;
  out.zero_();
  Tensor local = block(unsharded_, rank, world);
  out.narrow(0, 0, local.numel()).view(local.sizes()).copy_(local);
}

void FSDPParam::gradCopyIn(const Tensor& grad, const Tensor& buffer, int64_t offset) const {
  for (int r = 0; r < shardWorld(); ++r) {
    Tensor dst = piece(buffer, r, offset, shardWorld());
    dst.copy_(block(grad, r, shardWorld()));
  }
}

Tensor FSDPParam::shardedGradView(const Tensor& reduced, int64_t offset) const {
  return reduced.narrow(0, offset, sharded_.numel()).view(sharded_.sizes());
}

Tensor FSDPParam::toShardDevice(const Tensor& grad) const {
  if (grad.device() == sharded_.device()) return grad.to(sharded_.dtype());
  Tensor host = hostEmpty(grad.sizes(), sharded_.dtype(), pinHost_);
  host.copy_(grad);
  return host;
}

void FSDPParam::allocateUnsharded() {
  if (!unshardedAllocated()) unsharded_.storage()->reallocate(unshardedBytes());
}

void FSDPParam::freeUnsharded() {
  if (unshardedAllocated()) unsharded_.storage()->release();
}

void FSDPParam::useSharded() {
  for (auto& o : owners_) o.module->setParameter(o.name, sharded_);
}

void FSDPParam::useUnsharded() {
  for (auto& o : owners_) o.module->setParameter(o.name, unsharded_);
}

}  // namespace distlab::fsdp
