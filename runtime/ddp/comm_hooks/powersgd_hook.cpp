// powerSgdHook and batchedPowerSgdHook (see powersgd_hook.hpp).
#include <algorithm>
#include <cmath>
#include <utility>

#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"
#include "runtime/ddp/comm_hooks/default_hooks.hpp"
#include "runtime/ddp/comm_hooks/powersgd_hook.hpp"

namespace distlab::ddp {
namespace {

std::shared_ptr<PowerSGDState> requireState(const HookState& state, const char* hook) {
  auto s = hookStateAs<PowerSGDState>(state, hook, "PowerSGDState");
  if (!s) throw ValueError(std::string(hook) + ": the state must be a PowerSGDState, got none");
  return s;
}

void allreduceAndWait(const comm::ProcessGroupPtr& group, const Tensor& t) {
  if (t.numel() > 0) group->allreduce(t)->wait();
}

// Fills each [batch, rows, r] Q with N(0, 1) from a per-call seed (the same on
// every rank) and orthogonalises it.
void randomizeQs(PowerSGDState& state, std::vector<Tensor>& qs) {
  Generator gen(state.nextSeed());
  for (Tensor& q : qs) {
    q.copy_(randn(q.sizes(), gen, TensorOptions{q.dtype()}));
    detail::orthogonalize(q, state.options().orthogonalizationEpsilon);
  }
}

// Error feedback: add last error into the bucket, keep a copy of the input.
Tensor applyErrorFeedback(PowerSGDState& state, size_t index, Tensor& input) {
  if (!state.options().useErrorFeedback) return {};
  auto it = state.errorDict.find(index);
  if (it != state.errorDict.end()) {
    input.add_(it->second);
  } else {
    DL_LOG(INFO, "A zero tensor of length {} that represents local error is created.",
           input.numel());
    state.errorDict[index] = zerosLike(input);
  }
  return input.clone();
}

struct Plan {
  std::vector<Tensor> uncompressed;                          // views of the bucket
  std::vector<std::pair<Shape, std::vector<Tensor>>> byShape; // n x m views, first-seen order
  int64_t totalP = 0, totalQ = 0;
};

Plan plan(PowerSGDState& state, const GradBucket& bucket) {
  Plan p;
  const int64_t rank = state.options().matrixApproximationRank;
  for (const Tensor& t : bucket.gradients()) {
    const int64_t n = t.dim() == 0 ? 1 : t.size(0);
    const int64_t m = n == 0 ? 0 : t.numel() / n;
    const int64_t r = std::min({n, m, rank});
    auto [compress, before, after] =
        detail::shouldCompress(n, m, r, state.options().minCompressionRate);
    state.totalNumelBeforeCompression += before;
    if (!compress) {
      p.uncompressed.push_back(t);
      state.totalNumelAfterCompression += before;
      continue;
    }
    state.totalNumelAfterCompression += after;
    p.totalP += n * r;
    p.totalQ += m * r;
    Tensor matrix = t.view({n, m});
    auto it = std::find_if(p.byShape.begin(), p.byShape.end(),
                           [&](const auto& e) { return e.first == matrix.sizes(); });
    if (it == p.byShape.end()) {
      p.byShape.push_back({matrix.sizes(), {}});
      it = p.byShape.end() - 1;
    }
    it->second.push_back(matrix);
  }
  return p;
}

}  // namespace

FuturePtr powerSgdHook(const HookState& hookState, GradBucket& bucket) {
  auto state = requireState(hookState, "powerSgdHook");
  comm::ProcessGroupPtr group = state->processGroup() ? state->processGroup()
                                                      : bucket.processGroup();
  Tensor input = bucket.buffer();
  if (state->iter() < state->options().startPowerSGDIter) {
    state->maybeIncreaseIter(bucket);
    return allreduceHook(HookState(group), bucket);
  }
  const auto ws = static_cast<double>(group->size());
  const size_t index = bucket.index();
  const DType dtype = input.dtype();
  Tensor inputCopy = applyErrorFeedback(*state, index, input);
  Plan p = plan(*state, bucket);
  state->reportCompressionStats(bucket);

  std::vector<Tensor> flat;
  for (const Tensor& t : p.uncompressed) flat.push_back(t.reshape({-1}));
  Tensor uncompressedMem = flat.empty() ? empty({0}, TensorOptions{dtype}) : cat(flat);

  const bool warm = state->options().warmStart;
  const bool needRandomize = !warm || state->pMemoryDict.count(index) == 0;
  if (needRandomize) {
    state->pMemoryDict[index] = empty({p.totalP}, TensorOptions{dtype});
    state->qMemoryDict[index] = empty({p.totalQ}, TensorOptions{dtype});
  }
  Tensor pMem = state->pMemoryDict[index];
  Tensor qMem = state->qMemoryDict[index];
  // Batches: [b, n, m] tensors (stacked copies or unsqueezed views) and the
  // P/Q views into the contiguous memories.
  std::vector<Tensor> mats, ps, qs;
  std::vector<const std::vector<Tensor>*> stackedOrigins;
  const int64_t rank = state->options().matrixApproximationRank;
  int64_t pIdx = 0, qIdx = 0;
  auto addBatch = [&](Tensor batch, const std::vector<Tensor>* origins) {
    const int64_t b = batch.size(0), n = batch.size(1), m = batch.size(2);
    const int64_t r = std::min({n, m, rank});
    mats.push_back(batch);
    stackedOrigins.push_back(origins);
    ps.push_back(pMem.narrow(0, pIdx, b * n * r).view({b, n, r}));
    qs.push_back(qMem.narrow(0, qIdx, b * m * r).view({b, m, r}));
    pIdx += b * n * r;
    qIdx += b * m * r;
  };
  for (auto& [shape, tensors] : p.byShape) {
    if (state->options().batchTensorsWithSameShape && tensors.size() > 1) {
      addBatch(stack(tensors), &tensors);
    } else {
      for (const Tensor& t : tensors) addBatch(t.unsqueeze(0), nullptr);
    }
  }
  if (needRandomize) {
    randomizeQs(*state, qs);
  } else {
    for (Tensor& q : qs) detail::orthogonalize(q, state->options().orthogonalizationEpsilon);
  }
  for (size_t i = 0; i < mats.size(); ++i) ps[i].copy_(mats[i].bmm(qs[i]));
  // Issue order as PyTorch: uncompressed tensors, then Ps, then Qs.
  allreduceAndWait(group, uncompressedMem);
  if (uncompressedMem.numel() > 0) uncompressedMem.div_(ws);
  int64_t offset = 0;
  for (Tensor& t : p.uncompressed) {
    t.copy_(uncompressedMem.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
  allreduceAndWait(group, pMem);
  for (Tensor& pv : ps) detail::orthogonalize(pv, state->options().orthogonalizationEpsilon);
  for (size_t i = 0; i < mats.size(); ++i) qs[i].copy_(mats[i].transpose(1, 2).bmm(ps[i]));
  allreduceAndWait(group, qMem);
  if (qMem.numel() > 0) qMem.div_(ws);
  for (size_t i = 0; i < mats.size(); ++i) {
    mats[i].copy_(ps[i].bmm(qs[i].transpose(1, 2)));
    if (stackedOrigins[i]) {
      for (size_t k = 0; k < stackedOrigins[i]->size(); ++k) {
        Tensor original = (*stackedOrigins[i])[k];
        original.copy_(mats[i].select(0, static_cast<int64_t>(k)));
      }
    }
  }
  if (inputCopy.defined()) state->errorDict[index] = inputCopy.sub(input);
  if (!warm) {
    state->pMemoryDict.clear();
    state->qMemoryDict.clear();
  }
  state->maybeIncreaseIter(bucket);
  return comm::Future::completed({input});
}

FuturePtr batchedPowerSgdHook(const HookState& hookState, GradBucket& bucket) {
  auto state = requireState(hookState, "batchedPowerSgdHook");
  comm::ProcessGroupPtr group = state->processGroup() ? state->processGroup()
                                                      : bucket.processGroup();
  Tensor input = bucket.buffer();
  if (state->iter() < state->options().startPowerSGDIter) {
    state->maybeIncreaseIter(bucket);
    return allreduceHook(HookState(group), bucket);
  }
  const int64_t total = input.numel();
  const auto side = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(total))));
  const int64_t rank = state->options().matrixApproximationRank;
  state->totalNumelBeforeCompression += total;
  state->totalNumelAfterCompression += side * rank * 2;
  state->reportCompressionStats(bucket);
  // The padded square copy of the bucket.
  Tensor padded = zeros({side * side}, TensorOptions{input.dtype()});
  padded.narrow(0, 0, total).copy_(input);
  const size_t index = bucket.index();
  Tensor paddedCopy;
  if (state->options().useErrorFeedback) {
    auto it = state->errorDict.find(index);
    if (it != state->errorDict.end()) {
      padded.add_(it->second);
    } else {
      state->errorDict[index] = zerosLike(padded);
    }
    paddedCopy = padded.clone();
  }
  Tensor matrix = padded.view({side, side});
  const bool warm = state->options().warmStart;
  if (!warm || state->pMemoryDict.count(index) == 0) {
    state->pMemoryDict[index] = empty({side, rank}, TensorOptions{input.dtype()});
    std::vector<Tensor> qs{empty({1, side, rank}, TensorOptions{input.dtype()})};
    randomizeQs(*state, qs);
    state->qMemoryDict[index] = qs[0].view({side, rank});
  }
  Tensor p = state->pMemoryDict[index];
  Tensor q = state->qMemoryDict[index];
  p.copy_(matrix.matmul(q));
  allreduceAndWait(group, p);
  Tensor p3 = p.view({1, side, rank});
  detail::orthogonalize(p3, state->options().orthogonalizationEpsilon);
  q.copy_(matrix.t().matmul(p));
  allreduceAndWait(group, q);
  q.div_(static_cast<double>(group->size()));
  matrix.copy_(p.matmul(q.t()));
  if (paddedCopy.defined()) state->errorDict[index] = paddedCopy.sub(padded);
  if (!warm) {
    state->pMemoryDict.clear();
    state->qMemoryDict.clear();
  }
  input.copy_(padded.narrow(0, 0, total));
  state->maybeIncreaseIter(bucket);
  return comm::Future::completed({input});
}

}  // namespace distlab::ddp
