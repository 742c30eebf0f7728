// powerSgdHook and batchedPowerSgdHook (see powersgd_hook.hpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
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

// Note [PowerSGD future chain]
// A PowerSGD bucket needs three allreduces, and the Q allreduce needs the
// result of the P allreduce. The hook never waits for them: it computes what
// it can (error feedback, P = M Q), issues the uncompressed and P allreduces,
// and returns a Future completed by callbacks: when P arrives, orthogonalise
// it, compute Q = M^T P and issue the Q allreduce; when Q and the uncompressed
// part arrive, decompress M ~ P Q^T in place and complete the Future.
// Issue order is what keeps ranks paired (Note [Hook collectives and issue
// order]): a bucket's collectives are issued only after every collective of the
// buckets hooked before it was issued (PowerSGDState::issueTail), so every rank
// issues U0 P0 Q0 U1 P1 Q1 ... whatever thread a step runs on. Shared data
// lives in a Job owned by the callbacks; the state's maps are only read and
// written on the hook's thread (error tensors are updated in place).

using comm::Future;

// A completed Future for an empty tensor (nothing to reduce), else the allreduce's.
FuturePtr issueAllreduce(const comm::ProcessGroupPtr& group, const Tensor& t) {
  if (t.numel() == 0) return Future::completed({t});
  return group->allreduce(t)->getFuture();
}

// Runs fn once every future in `futs` completed, on the thread completing the last.
void whenAll(const std::vector<FuturePtr>& futs, std::function<void()> fn) {
  auto left = std::make_shared<std::atomic<size_t>>(futs.size());
  auto shared = std::make_shared<std::function<void()>>(std::move(fn));
  for (const auto& f : futs) {
    f->addCallback([left, shared](Future&) {
      if (left->fetch_sub(1) == 1) (*shared)();
    });
  }
}

void rethrowAny(const std::vector<FuturePtr>& futs) {
  for (const auto& f : futs) {
    if (auto e = f->exception()) std::rethrow_exception(e);
  }
}

// Runs `step` (which may issue collectives) after the previous bucket's issues;
// `issued` completes once `step` issued its last collective. An exception in a
// step fails `result` (and `issued`, so that later buckets fail instead of
// issuing out of order).
class Chain {
 public:
  explicit Chain(PowerSGDState& state) : result_(std::make_shared<Future>()) {
    prev_ = state.issueTail;
    issued_ = std::make_shared<Future>();
    state.issueTail = issued_;
  }
  const FuturePtr& result() const { return result_; }
  // Runs fn after the previous bucket's issue step completed (now if it did).
  void afterPrevious(std::function<void()> fn) {
    auto self = *this;
    auto run = [self, fn = std::move(fn)](Future* prev) {
      self.guard([&] {
        if (prev && prev->exception()) std::rethrow_exception(prev->exception());
        fn();
      });
    };
    if (!prev_) {
      run(nullptr);
    } else {
      prev_->addCallback([run](Future& f) { run(&f); });
    }
  }
  void markIssued() const {
    if (!issued_->isCompleted()) issued_->markCompleted({});
  }
  void complete(const Tensor& value) const { result_->markCompleted({value}); }
  // Runs fn; on an exception fails the result and the issue chain.
  template <typename Fn>
  void guard(Fn&& fn) const {
    try {
      fn();
    } catch (...) {
      auto e = std::current_exception();
      if (!issued_->isCompleted()) issued_->setError(e);
      if (!result_->isCompleted()) result_->setError(e);
    }
  }

 private:
  FuturePtr prev_, issued_, result_;
};

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

namespace {

// Everything the steps of one bucket's chain share.
struct PowerSgdJob {
  comm::ProcessGroupPtr group;
  double worldSize = 1.0;
  double epsilon = 0.0;
  Tensor input, inputCopy, error;   // error: the state's tensor, updated in place
  Plan plan;
  Tensor uncompressedMem, pMem, qMem;
  std::vector<Tensor> mats, ps, qs;
  std::vector<const std::vector<Tensor>*> stackedOrigins;
};

// Batches: [b, n, m] tensors (stacked copies or unsqueezed views) and the
// P/Q views into the contiguous memories.
void buildBatches(PowerSgdJob& job, int64_t rank, bool batchSameShape) {
  int64_t pIdx = 0, qIdx = 0;
  auto addBatch = [&](Tensor batch, const std::vector<Tensor>* origins) {
    const int64_t b = batch.size(0), n = batch.size(1), m = batch.size(2);
    const int64_t r = std::min({n, m, rank});
    job.mats.push_back(batch);
    job.stackedOrigins.push_back(origins);
    job.ps.push_back(job.pMem.narrow(0, pIdx, b * n * r).view({b, n, r}));
    job.qs.push_back(job.qMem.narrow(0, qIdx, b * m * r).view({b, m, r}));
    pIdx += b * n * r;
    qIdx += b * m * r;
  };
  for (auto& [shape, tensors] : job.plan.byShape) {
    if (batchSameShape && tensors.size() > 1) {
      addBatch(stack(tensors), &tensors);
    } else {
      for (const Tensor& t : tensors) addBatch(t.unsqueeze(0), nullptr);
    }
  }
}

// Last step: the uncompressed average and M ~ P Q^T, in place in the bucket.
void decompress(PowerSgdJob& job) {
  if (job.uncompressedMem.numel() > 0) job.uncompressedMem.div_(job.worldSize);
  int64_t offset = 0;
  for (Tensor& t : job.plan.uncompressed) {
    t.copy_(job.uncompressedMem.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
  if (job.qMem.numel() > 0) job.qMem.div_(job.worldSize);
  for (size_t i = 0; i < job.mats.size(); ++i) {
    job.mats[i].copy_(job.ps[i].bmm(job.qs[i].transpose(1, 2)));
    if (const auto* origins = job.stackedOrigins[i]) {
      for (size_t k = 0; k < origins->size(); ++k) {
        Tensor original = (*origins)[k];
        original.copy_(job.mats[i].select(0, static_cast<int64_t>(k)));
      }
    }
  }
  if (job.inputCopy.defined()) job.error.copy_(job.inputCopy.sub(job.input));
}

}  // namespace

FuturePtr powerSgdHook(const HookState& hookState, GradBucket& bucket) {
  auto state = requireState(hookState, "powerSgdHook");
  comm::ProcessGroupPtr group = state->processGroup() ? state->processGroup()
                                                      : bucket.processGroup();
  if (state->iter() < state->options().startPowerSGDIter) {
    state->maybeIncreaseIter(bucket);
    return allreduceHook(HookState(group), bucket);
  }
  auto job = std::make_shared<PowerSgdJob>();
  job->group = group;
  job->worldSize = static_cast<double>(group->size());
  job->epsilon = state->options().orthogonalizationEpsilon;
  job->input = bucket.buffer();
  const size_t index = bucket.index();
  const DType dtype = job->input.dtype();
  job->inputCopy = applyErrorFeedback(*state, index, job->input);
  if (job->inputCopy.defined()) job->error = state->errorDict[index];
  job->plan = plan(*state, bucket);
  state->reportCompressionStats(bucket);

  std::vector<Tensor> flat;
  for (const Tensor& t : job->plan.uncompressed) flat.push_back(t.reshape({-1}));
  job->uncompressedMem = flat.empty() ? empty({0}, TensorOptions{dtype}) : cat(flat);
  const bool warm = state->options().warmStart;
  const bool needRandomize = !warm || state->pMemoryDict.count(index) == 0;
  if (needRandomize) {
    state->pMemoryDict[index] = empty({job->plan.totalP}, TensorOptions{dtype});
    state->qMemoryDict[index] = empty({job->plan.totalQ}, TensorOptions{dtype});
  }
  job->pMem = state->pMemoryDict[index];
  job->qMem = state->qMemoryDict[index];
  buildBatches(*job, state->options().matrixApproximationRank,
               state->options().batchTensorsWithSameShape);
  if (needRandomize) {
    randomizeQs(*state, job->qs);
  } else {
    for (Tensor& q : job->qs) detail::orthogonalize(q, job->epsilon);
  }
  for (size_t i = 0; i < job->mats.size(); ++i) job->ps[i].copy_(job->mats[i].bmm(job->qs[i]));
  if (!warm) {
    state->pMemoryDict.erase(index);
    state->qMemoryDict.erase(index);
  }
  state->maybeIncreaseIter(bucket);

  // Note [PowerSGD future chain]: issue order as PyTorch: uncompressed, P, Q.
  Chain chain(*state);
  chain.afterPrevious([chain, job] {
    FuturePtr u = issueAllreduce(job->group, job->uncompressedMem);
    FuturePtr p = issueAllreduce(job->group, job->pMem);
    whenAll({p}, [chain, job, u, p] {
      chain.guard([&] {
        rethrowAny({p});
        for (Tensor& pv : job->ps) detail::orthogonalize(pv, job->epsilon);
        for (size_t i = 0; i < job->mats.size(); ++i) {
          job->qs[i].copy_(job->mats[i].transpose(1, 2).bmm(job->ps[i]));
        }
        FuturePtr q = issueAllreduce(job->group, job->qMem);
        chain.markIssued();
        whenAll({u, q}, [chain, job, u, q] {
          chain.guard([&] {
            rethrowAny({u, q});
            decompress(*job);
            chain.complete(job->input);
          });
        });
      });
    });
  });
  return chain.result();
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
  Tensor paddedCopy, error;
  if (state->options().useErrorFeedback) {
    auto it = state->errorDict.find(index);
    if (it != state->errorDict.end()) {
      padded.add_(it->second);
    } else {
      state->errorDict[index] = zerosLike(padded);
    }
    error = state->errorDict[index];
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
  if (!warm) {
    state->pMemoryDict.erase(index);
    state->qMemoryDict.erase(index);
  }
  state->maybeIncreaseIter(bucket);
  const double eps = state->options().orthogonalizationEpsilon;
  const auto ws = static_cast<double>(group->size());
  // Note [PowerSGD future chain], with P and Q only.
  Chain chain(*state);
  chain.afterPrevious([=]() mutable {
    FuturePtr pf = issueAllreduce(group, p);
    whenAll({pf}, [=]() mutable {
      chain.guard([&] {
        rethrowAny({pf});
        Tensor p3 = p.view({1, side, rank});
        detail::orthogonalize(p3, eps);
        q.copy_(matrix.t().matmul(p));
        FuturePtr qf = issueAllreduce(group, q);
        chain.markIssued();
        whenAll({qf}, [=]() mutable {
          chain.guard([&] {
            rethrowAny({qf});
            q.div_(ws);
            matrix.copy_(p.matmul(q.t()));
            if (paddedCopy.defined()) error.copy_(paddedCopy.sub(padded));
            input.copy_(padded.narrow(0, 0, total));
            chain.complete(input);
          });
        });
      });
    });
  });
  return chain.result();
}

}  // namespace distlab::ddp
