// PowerSGD against a reference computed here, in double precision, from the
// same per-rank inputs: M ~ P Q^T with P = orth(sum_r M_r Q0), Q = sum_r
// M_r^T P / N, the uncompressed part averaged, error feedback e_r = fed input
// - result, warm start reusing Q; the batched hook likewise on the whole
// zero-padded bucket. Also checks the hooks never wait: rank 1
// calls its hook only after rank 0's hook returned, and rank 0's Future is
// still pending then (Note [PowerSGD future chain]).
//
// Tolerance: 1e-4 of the largest reference entry (min 1). The hook works in
// float32 (relative rounding 6e-8 per operation); each result entry passes
// through two products of depth <= 12, a sum over 2 ranks and a double
// Gram-Schmidt of random (well-conditioned) columns, and with warm start and
// error feedback through 3 such iterations: well below 1e-5 relative;
// 1e-4 leaves margin without hiding an algorithmic error (a wrong Q0, a
// missing division by N or an unorthogonalised P change entries by O(1)).
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/ddp/comm_hooks/powersgd_hook.hpp"
#include "tests/ddp/ddp_test_util.hpp"

namespace distlab::testing {
namespace {

constexpr int64_t kN = 12, kM = 10, kBias = 10;  // a 12x10 weight and a bias of 10
constexpr double kTol = 1e-4;

// Row-major double matrix: the reference never uses the library's kernels.
struct Dense {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Dense(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), 0.0) {}
  double& at(int64_t i, int64_t j) { return v[static_cast<size_t>(i * cols + j)]; }
  double at(int64_t i, int64_t j) const { return v[static_cast<size_t>(i * cols + j)]; }
};

Dense denseOf(const Tensor& t, int64_t rows, int64_t cols) {
  Tensor c = t.to(DType::kFloat64).contiguous();
  Dense d(rows, cols);
  for (int64_t i = 0; i < rows * cols; ++i) d.v[static_cast<size_t>(i)] = c.data<double>()[i];
  return d;
}

Dense matmul(const Dense& a, const Dense& b, bool transposeA = false) {
  const int64_t n = transposeA ? a.cols : a.rows, k = transposeA ? a.rows : a.cols;
  Dense out(n, b.cols);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < b.cols; ++j) {
      double s = 0.0;
      for (int64_t l = 0; l < k; ++l) s += (transposeA ? a.at(l, i) : a.at(i, l)) * b.at(l, j);
      out.at(i, j) = s;
    }
  }
  return out;
}

Dense plus(const Dense& a, const Dense& b, double scaleB = 1.0) {
  Dense out = a;
  for (size_t i = 0; i < out.v.size(); ++i) out.v[i] += scaleB * b.v[i];
  return out;
}

// Gram-Schmidt on the columns, in order (each normalised, then removed from the later ones).
void orthonormalize(Dense& a) {
  for (int64_t i = 0; i < a.cols; ++i) {
    double norm = 0.0;
    for (int64_t k = 0; k < a.rows; ++k) norm += a.at(k, i) * a.at(k, i);
    norm = std::sqrt(norm);
    for (int64_t k = 0; k < a.rows; ++k) a.at(k, i) /= norm;
    for (int64_t j = i + 1; j < a.cols; ++j) {
      double dot = 0.0;
      for (int64_t k = 0; k < a.rows; ++k) dot += a.at(k, i) * a.at(k, j);
      for (int64_t k = 0; k < a.rows; ++k) a.at(k, j) -= dot * a.at(k, i);
    }
  }
}

struct Inputs {
  Dense m{kN, kM};
  Dense b{kBias, 1};
  Tensor flat;  // float32 [kN * kM + kBias], the bucket's content
};

Inputs inputsOf(int rank, int iteration) {
  Generator gen(100 + 10 * static_cast<uint64_t>(iteration) + static_cast<uint64_t>(rank));
  Inputs in;
  Tensor w = randn({kN, kM}, gen);
  Tensor b = randn({kBias}, gen);
  in.m = denseOf(w, kN, kM);
  in.b = denseOf(b, kBias, 1);
  in.flat = cat({w.reshape({-1}), b});
  return in;
}

// What every rank's bucket should hold after one compressed iteration.
class Reference {
 public:
  Reference(const ddp::PowerSGDOptions& o, int worldSize)
      : o_(o), ws_(worldSize), seeds_(nullptr, o), errM_(worldSize, Dense(kN, kM)),
        errB_(worldSize, Dense(kBias, 1)), q_(kM, o.matrixApproximationRank) {}

  void step(std::vector<Inputs> in, Dense& outM, Dense& outB) {
    const int64_t r = o_.matrixApproximationRank;
    if (o_.useErrorFeedback) {
      for (int k = 0; k < ws_; ++k) {
        in[k].m = plus(in[k].m, errM_[k]);
        in[k].b = plus(in[k].b, errB_[k]);
      }
    }
    Dense q0(kM, r);
    if (!o_.warmStart || !haveQ_) {
      // The hook's initialisation: N(0,1) from the state's next seed.
      Generator gen(seeds_.nextSeed());
      q0 = denseOf(randn({1, kM, r}, gen), kM, r);
    } else {
      q0 = q_;
    }
    orthonormalize(q0);
    Dense p(kN, r);
    for (int k = 0; k < ws_; ++k) p = plus(p, matmul(in[k].m, q0));
    orthonormalize(p);
    Dense q(kM, r);
    for (int k = 0; k < ws_; ++k) q = plus(q, matmul(in[k].m, p, /*transposeA=*/true), 1.0 / ws_);
    Dense qt(r, kM);
    for (int64_t i = 0; i < kM; ++i) {
      for (int64_t j = 0; j < r; ++j) qt.at(j, i) = q.at(i, j);
    }
    outM = matmul(p, qt);
    outB = Dense(kBias, 1);
    for (int k = 0; k < ws_; ++k) outB = plus(outB, in[k].b, 1.0 / ws_);
    for (int k = 0; k < ws_; ++k) {
      errM_[k] = plus(in[k].m, outM, -1.0);
      errB_[k] = plus(in[k].b, outB, -1.0);
    }
    q_ = q;
    haveQ_ = true;
  }
  const Dense& errorM(int rank) const { return errM_[rank]; }

 private:
  ddp::PowerSGDOptions o_;
  int ws_;
  ddp::PowerSGDState seeds_;  // only its seed sequence (the same as the hook's state)
  std::vector<Dense> errM_, errB_;
  Dense q_;
  bool haveQ_ = false;
};

// batchedPowerSgdHook: the whole bucket (kBucket values) zero-padded to a
// kSide x kSide matrix M_r; P = orth(sum_r M_r Q0), Q = sum_r M_r^T P / N,
// result P Q^T truncated to the bucket; error feedback over the padded matrix.
// Warm start reuses Q as it is (only the first, random Q is orthogonalised,
// as in PyTorch's batched hook).
constexpr int64_t kBucket = kN * kM + kBias;
constexpr int64_t kSide = 12;  // ceil(sqrt(130))

class BatchedReference {
 public:
  BatchedReference(const ddp::PowerSGDOptions& o, int worldSize)
      : o_(o), ws_(worldSize), seeds_(nullptr, o), err_(worldSize, Dense(kSide, kSide)),
        q_(kSide, o.matrixApproximationRank) {}

  // Returns the bucket's values after one compressed iteration.
  Dense step(const std::vector<Inputs>& in) {
    const int64_t r = o_.matrixApproximationRank;
    std::vector<Dense> mats;
    for (int k = 0; k < ws_; ++k) {
      Dense m(kSide, kSide);
      const Dense flat = denseOf(in[k].flat, kBucket, 1);
      for (int64_t i = 0; i < kBucket; ++i) m.v[static_cast<size_t>(i)] = flat.v[static_cast<size_t>(i)];
      mats.push_back(o_.useErrorFeedback ? plus(m, err_[k]) : m);
    }
    if (!o_.warmStart || !haveQ_) {
      Generator gen(seeds_.nextSeed());
      q_ = denseOf(randn({1, kSide, r}, gen), kSide, r);
      orthonormalize(q_);
      haveQ_ = true;
    }
    Dense p(kSide, r);
    for (int k = 0; k < ws_; ++k) p = plus(p, matmul(mats[k], q_));
    orthonormalize(p);
    Dense q(kSide, r);
    for (int k = 0; k < ws_; ++k) q = plus(q, matmul(mats[k], p, /*transposeA=*/true), 1.0 / ws_);
    Dense qt(r, kSide);
    for (int64_t i = 0; i < kSide; ++i) {
      for (int64_t j = 0; j < r; ++j) qt.at(j, i) = q.at(i, j);
    }
    const Dense result = matmul(p, qt);
    for (int k = 0; k < ws_; ++k) err_[k] = plus(mats[k], result, -1.0);
    q_ = q;
    Dense out(kBucket, 1);
    for (int64_t i = 0; i < kBucket; ++i) out.v[static_cast<size_t>(i)] = result.v[static_cast<size_t>(i)];
    return out;
  }
  const Dense& error(int rank) const { return err_[rank]; }

 private:
  ddp::PowerSGDOptions o_;
  int ws_;
  ddp::PowerSGDState seeds_;
  std::vector<Dense> err_;
  Dense q_;
  bool haveQ_ = false;
};

double maxAbsDiff(const Tensor& got, const Dense& want) {
  Tensor g = got.to(DType::kFloat64).contiguous();
  double worst = 0.0, scale = 1.0;
  for (size_t i = 0; i < want.v.size(); ++i) {
    worst = std::max(worst, std::abs(g.data<double>()[i] - want.v[i]));
    scale = std::max(scale, std::abs(want.v[i]));
  }
  return worst / scale;
}

// Calls the hook on this rank's bucket. Rank 1 calls only after rank 0's hook
// returned with its Future still pending: a hook that waited for a collective
// would never return on rank 0.
ddp::FuturePtr callHookInOrder(RankContext& ctx, const ddp::CommHookFn& hook,
                               const std::shared_ptr<ddp::PowerSGDState>& state,
                               const comm::ProcessGroupPtr& group, Tensor buffer,
                               const std::string& key) {
  std::vector<Tensor> params{zeros({kN, kM}), zeros({kBias})};
  ddp::GradBucket bucket(0, 1, buffer, {0, kN * kM}, {kN * kM, kBias}, {{kN, kM}, {kBias}},
                         params, group);
  if (ctx.rank == 1) ctx.store->wait({key}, std::chrono::seconds(20));
  ddp::FuturePtr fut = hook(ddp::HookState(state), bucket);
  if (ctx.rank == 0) {
    EXPECT_FALSE(fut->isCompleted()) << key << ": completed before rank 1 issued anything";
    ctx.store->setString(key, "1");
  }
  return fut;
}

void runConfig(RankContext& ctx, const comm::ProcessGroupPtr& group, int64_t rank,
               bool feedback, bool warm, bool batched) {
  ddp::PowerSGDOptions o;
  o.matrixApproximationRank = rank;
  o.useErrorFeedback = feedback;
  o.warmStart = warm;
  o.startPowerSGDIter = 2;
  o.randomSeed = 7;
  const std::string name =
      fmt::format("{}r{}-ef{}-ws{}", batched ? "b" : "", rank, int(feedback), int(warm));
  const ddp::CommHookFn hook = batched ? ddp::CommHookFn(ddp::batchedPowerSgdHook)
                                       : ddp::CommHookFn(ddp::powerSgdHook);
  auto state = std::make_shared<ddp::PowerSGDState>(group, o);
  Reference ref(o, ctx.worldSize);
  BatchedReference batchedRef(o, ctx.worldSize);
  for (int it = 0; it < 5; ++it) {
    std::vector<Inputs> all;
    for (int k = 0; k < ctx.worldSize; ++k) all.push_back(inputsOf(k, it));
    Tensor buffer = all[ctx.rank].flat.clone();
    ddp::FuturePtr fut =
        callHookInOrder(ctx, hook, state, group, buffer, fmt::format("{}-{}", name, it));
    Tensor out = fut->value(std::chrono::seconds(20))[0];
    const std::string where = fmt::format("{} iteration {}", name, it);
    if (it < o.startPowerSGDIter) {  // vanilla allreduce: the plain average
      Dense want(kBucket, 1);
      for (int k = 0; k < ctx.worldSize; ++k) {
        want = plus(want, denseOf(all[k].flat, kBucket, 1), 1.0 / ctx.worldSize);
      }
      EXPECT_LE(maxAbsDiff(out, want), kTol) << where;
    } else if (batched) {
      EXPECT_LE(maxAbsDiff(out, batchedRef.step(all)), kTol) << where;
      if (feedback) {
        EXPECT_LE(maxAbsDiff(state->errorDict.at(0), batchedRef.error(ctx.rank)), kTol) << where;
      }
    } else {
      Dense wantM(kN, kM), wantB(kBias, 1);
      ref.step(all, wantM, wantB);
      EXPECT_LE(maxAbsDiff(out.narrow(0, 0, kN * kM), wantM), kTol) << where;
      EXPECT_LE(maxAbsDiff(out.narrow(0, kN * kM, kBias), wantB), kTol) << where;
      if (feedback) {
        EXPECT_LE(maxAbsDiff(state->errorDict.at(0).narrow(0, 0, kN * kM), ref.errorM(ctx.rank)),
                  kTol)
            << where;
      }
    }
  }
}

void runAllConfigs(bool batched) {
  spawn(SpawnMode::kThreads, 2, [&](RankContext& ctx) {
    auto group = makeGroup(ctx, "psgd", std::chrono::seconds(20));
    for (int64_t rank : {1, 2}) {
      for (bool feedback : {false, true}) {
        for (bool warm : {false, true}) runConfig(ctx, group, rank, feedback, warm, batched);
      }
    }
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(PowerSgdReferenceTest, HookMatchesReferenceAndNeverWaits) { runAllConfigs(false); }

TEST(PowerSgdReferenceTest, BatchedHookMatchesReferenceAndNeverWaits) { runAllConfigs(true); }

}  // namespace
}  // namespace distlab::testing
