#include "runtime/fsdp/fsdp_param_group.hpp"

#include <cmath>

#include "runtime/autograd/grad_mode.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::fsdp {
namespace {

// Note [FSDP gradient division]: the pre-division of the sum mode.
double preDivideFactor(double factor) {
  const auto f = static_cast<int64_t>(factor);
  if (static_cast<double>(f) != factor || f < 1) return 1.0;
  int64_t pre = 1;
  while (f % pre == 0 && f / pre > pre) pre *= 2;
  return static_cast<double>(pre);
}

void dropGrad(const Tensor& leaf) {
  if (AutogradMeta* meta = leaf.autogradMeta()) meta->grad = Tensor();
}

}  // namespace

FSDPParamGroup::FSDPParamGroup(std::vector<std::unique_ptr<FSDPParam>> params,
                               comm::DeviceMesh mesh, MixedPrecisionPolicy mp,
                               MemoryStats* memory)
    : params_(std::move(params)), mesh_(std::move(mesh)), mp_(mp), memory_(memory) {
  for (const auto& p : params_) {
    offsets_.push_back(total_);
    total_ += p->chunkNumel();
    DL_CHECK_T(ValueError, p->unsharded().dtype() == params_[0]->unsharded().dtype(),
               "FSDP all-gather expects uniform dtype but got ",
               dtypeName(params_[0]->unsharded().dtype()), " ('", params_[0]->fqn(), "') and ",
               dtypeName(p->unsharded().dtype()), " ('", p->fqn(),
               "'); set MixedPrecisionPolicy.paramDtype or wrap them separately");
  }
}

std::string_view FSDPParamGroup::traceName() const {
  return traceOwner_ != nullptr ? std::string_view(*traceOwner_->traceLabel()) : std::string_view();
}

// Communication buffers live where the unsharded parameters compute (the
// parameters' device; Note [CPU offload]: not the offloaded shards' host).
TensorOptions FSDPParamGroup::bufferOptions(DType dtype) const {
  return TensorOptions{}.withDType(dtype).withDevice(params_[0]->unsharded().device());
}

DType FSDPParamGroup::unshardedDtype() const { return params_[0]->unsharded().dtype(); }

DType FSDPParamGroup::reduceDtype() const {
  return mp_.reduceDtype.value_or(unshardedDtype());
}

FSDPParamGroup::~FSDPParamGroup() {
  // Buffers of a collective still in flight must outlive it (an unused
  // prefetch, or a reduction deferred by setIsLastBackward(false)).
  for (comm::WorkPtr* w : {&pendingGather_, pendingReduce_ ? &pendingReduce_->scatter : nullptr}) {
    if (w == nullptr || *w == nullptr) continue;
    try {
      (*w)->wait();
    } catch (const std::exception&) {  // a failed collective: its error was the caller's to see
    }
  }
}

void FSDPParamGroup::unshard() {
  if (unsharded_ || pendingGather_ || empty()) return;
  autograd::NoGradGuard noGrad;
  if (postForwardShard_.defined()) {  // Note [Resharding to a smaller world]
    gatherInput_ = postForwardShard_;
    gatherOutput_ = distlab::empty({postForward_.world * postForward_.total}, gatherInput_.options());
    pendingGather_ = postForward_.group->allgatherIntoTensor(gatherOutput_, gatherInput_);
    gatherFromPostForward_ = true;
    ++counts_.postForwardAllGathers;
    ++counts_.allGathers;
    if (join_) join_->record({this, FsdpCollective::Kind::kPostForwardAllGather, {}});
    return;
  }
  trace::Span span(trace::Category::kCompute, "fsdp all-gather copy-in ", traceName());
  gatherInput_ = distlab::empty({total_}, bufferOptions(unshardedDtype()));
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i]->copyIn(gatherInput_.narrow(0, offsets_[i], params_[i]->chunkNumel()));
  }
  gatherOutput_ = distlab::empty({shardWorld() * total_}, gatherInput_.options());
  const comm::ShardLayoutScope layout = traceShardLayout(unshardedDtype());
  pendingGather_ = shardGroup()->allgatherIntoTensor(gatherOutput_, gatherInput_);
  ++counts_.allGathers;
  if (join_) join_->record({this, FsdpCollective::Kind::kAllGather, {}});
}

comm::ShardLayoutScope FSDPParamGroup::traceShardLayout(DType dtype) const {
  if (!trace::enabled()) return {};
  std::vector<int64_t> rows, rowBytes;
  for (const auto& p : params_) {
    const Shape& shape = p->shape();
    const auto dim = static_cast<size_t>(p->placement().dim);
    const int64_t r = dim < shape.size() ? shape[dim] : 1;  // a scalar: one row
    rows.push_back(r);
    rowBytes.push_back(shapeNumel(shape) / std::max<int64_t>(1, r) *
                       static_cast<int64_t>(elementSize(dtype)));
  }
  return comm::ShardLayoutScope(rows, rowBytes);
}

void FSDPParamGroup::waitForUnshard() {
  if (unsharded_) return;
  if (empty()) {
    unsharded_ = true;
    return;
  }
  unshard();
  {
    trace::Span wait(trace::Category::kWait, "fsdp wait all-gather ", traceName());
    pendingGather_->wait();
  }
  pendingGather_.reset();
  autograd::NoGradGuard noGrad;
  trace::Span span(trace::Category::kCompute, "fsdp all-gather copy-out ", traceName());
  const bool post = gatherFromPostForward_;
  const int world = post ? postForward_.world : shardWorld();
  Tensor rows = gatherOutput_.view({world, post ? postForward_.total : total_});
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i]->allocateUnsharded();
    if (memory_) memory_->unshardedParams.add(params_[i]->unshardedBytes());
    params_[i]->copyOut(rows, post ? postForward_.offsets[i] : offsets_[i], world);
    params_[i]->useUnsharded();
  }
  releaseGatherBuffers();
  unsharded_ = true;
}

// Drops the all-gather buffers and, once its all-gather has been copied out
// or is no longer wanted, the post-forward shard.
void FSDPParamGroup::releaseGatherBuffers() {
  gatherInput_ = Tensor();
  gatherOutput_ = Tensor();
  gatherFromPostForward_ = false;
  if (postForwardShard_.defined()) {
    if (memory_) memory_->unshardedParams.sub(postForwardShard_.nbytes());
    postForwardShard_ = Tensor();
  }
}

void FSDPParamGroup::reshard() {
  if (pendingGather_) {  // a prefetch nobody used: let it land, then drop it
    pendingGather_->wait();
    pendingGather_.reset();
  }
  releaseGatherBuffers();
  if (!unsharded_) return;
  for (auto& p : params_) {
    if (memory_ && p->unshardedAllocated()) memory_->unshardedParams.sub(p->unshardedBytes());
    p->freeUnsharded();
    p->useSharded();
  }
  unsharded_ = false;
}

void FSDPParamGroup::setPostForwardGroup(comm::ProcessGroupPtr group) {
  postForward_ = Layout{};
  if (!group) return;
  postForward_.group = std::move(group);
  postForward_.world = postForward_.group->size();
  postForward_.rank = postForward_.group->rank();
  for (const auto& p : params_) {
    postForward_.offsets.push_back(postForward_.total);
    postForward_.total += p->chunkNumelFor(postForward_.world);
  }
}

void FSDPParamGroup::reshardAfterForward() {
  if (!postForward_.group || !unsharded_ || empty()) return reshard();
  autograd::NoGradGuard noGrad;
  Tensor shard = distlab::empty({postForward_.total}, bufferOptions(unshardedDtype()));
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i]->copyInUnsharded(
        shard.narrow(0, postForward_.offsets[i], params_[i]->chunkNumelFor(postForward_.world)),
        postForward_.world, postForward_.rank);
  }
  reshard();
  postForwardShard_ = shard;
  if (memory_) memory_->unshardedParams.add(shard.nbytes());
}

void FSDPParamGroup::postBackward() {
  if (postBackwardDone_) return;
  postBackwardDone_ = true;
  if (settings_.requiresGradientSync) issueReduceScatter();
  if (settings_.reshardAfterBackward) reshard();
}

size_t FSDPParamGroup::gradientBytes() const {
  size_t bytes = pendingReduce_ ? pendingReduce_->output.nbytes() : 0;
  for (const auto& p : params_) {
    if (p->unsharded().grad().defined()) bytes += p->unsharded().grad().nbytes();
    if (p->sharded().grad().defined()) bytes += p->sharded().grad().nbytes();
  }
  return bytes;
}

void FSDPParamGroup::setZeroGradients(const std::vector<size_t>& reduced) {
  autograd::NoGradGuard noGrad;
  for (size_t i : reduced) {
    Tensor leaf = params_.at(i)->unsharded();
    leaf.setGrad(zeros(leaf.sizes(), leaf.options()));
  }
}

// Note [FSDP under Join]: divide by the ranks still training, not the world
// (a custom divide factor is the caller's own division and stays as given).
void FSDPParamGroup::scaleForJoin(Tensor& input) {
  if (!join_ || settings_.gradientDivideFactor) return;
  if (const double scale = join_->gradientScale(); scale != 1.0) input.mul_(scale);
}

void FSDPParamGroup::issueReduceScatter() {
  std::vector<size_t> reduced;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i]->requiresGrad() && params_[i]->unsharded().grad().defined()) reduced.push_back(i);
  }
  if (reduced.empty()) return;
  if (pendingReduce_) finishReduction();
  autograd::NoGradGuard noGrad;
  const int replicas = mesh_.ndim() == 2 ? static_cast<int>(mesh_.shape()[0]) : 1;
  const double factor =
      settings_.gradientDivideFactor.value_or(static_cast<double>(shardWorld() * replicas));
  const bool sumMode = reduceDtype() == DType::kFloat16 || settings_.forceSumReduction;
  PendingReduce pr;
  pr.reduced = reduced;
  pr.sumMode = sumMode || settings_.gradientDivideFactor.has_value();
  comm::ReduceOp op = shardWorld() == 1 ? comm::ReduceOp::kSum : comm::ReduceOp::kAvg;
  double pre = 1.0;
  if (sumMode) {
    pre = preDivideFactor(factor);
    pr.postDivide = factor / pre;
    op = comm::ReduceOp::kSum;
  } else if (settings_.gradientDivideFactor) {
    op = comm::ReduceOp::premulSum(1.0 / factor);
  }
  trace::Span span(trace::Category::kCompute, "fsdp reduce-scatter copy-in ", traceName());
  pr.input = zeros({shardWorld(), total_}, bufferOptions(reduceDtype()));
  for (size_t i : reduced) {
    params_[i]->gradCopyIn(params_[i]->unsharded().grad(), pr.input, offsets_[i]);
  }
  if (pre != 1.0) pr.input.div_(pre);
  scaleForJoin(pr.input);
  for (size_t i : reduced) dropGrad(params_[i]->unsharded());
  pr.output = distlab::empty({total_}, pr.input.options());
  comm::ReduceScatterOptions opts;
  opts.reduceOp = op;
  const comm::ShardLayoutScope layout = traceShardLayout(reduceDtype());
  pr.scatter = shardGroup()->reduceScatterTensor(pr.output, pr.input.view({-1}), opts);
  ++counts_.reduceScatters;
  pendingReduce_ = std::move(pr);
  if (join_) join_->record({this, FsdpCollective::Kind::kReduceScatter, std::move(reduced)});
}

void FSDPParamGroup::finishReduction() {
  if (!pendingReduce_) return;
  PendingReduce pr = std::move(*pendingReduce_);
  pendingReduce_.reset();
  {
    trace::Span wait(trace::Category::kWait, "fsdp wait reduce-scatter ", traceName());
    pr.scatter->wait();
  }
  autograd::NoGradGuard noGrad;
  Tensor out = pr.output;
  const bool hsdp = mesh_.ndim() == 2 && mesh_.shape()[0] > 1;
  if (hsdp && settings_.requiresAllReduce) {
    comm::AllreduceOptions opts;
    opts.reduceOp = pr.sumMode ? comm::ReduceOp::kSum : comm::ReduceOp::kAvg;
    trace::Span wait(trace::Category::kWait, "fsdp all-reduce across replicas ", traceName());
    mesh_.getGroup(std::optional<int>(0))->allreduce(out, opts)->wait();
    ++counts_.allReduces;
    if (join_) join_->record({this, FsdpCollective::Kind::kReplicaAllReduce, {}});
  }
  if (pr.postDivide != 1.0) out.div_(pr.postDivide);
  if (settings_.allReduceHook) settings_.allReduceHook(out);
  for (size_t i : pr.reduced) {
    const FSDPParam& p = *params_[i];
    Tensor g = p.toShardDevice(p.shardedGradView(out, offsets_[i]));
    Tensor sharded = p.sharded();
    if (sharded.grad().defined()) {
      sharded.mutableGrad().add_(g);
    } else {
      sharded.setGrad(g);
    }
  }
}

}  // namespace distlab::fsdp
