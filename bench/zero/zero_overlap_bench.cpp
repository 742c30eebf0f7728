// ZeRO's step time with and without overlapWithDdp, side by side in one run
// (not a CTest test; run by hand: build/default/bench/zero/zero_overlap_bench).
// Two ranks (processes, shm), the MLP 16-32-32-4 of scenarios/zero/overlap_with_ddp
// (the DDP test MLP), Adam, 4 rows per rank per step, DDP buckets of
// bucket_cap_mb = 0.0005 as in that scenario. Three models trained in turn:
//   N. DDP + ZeRO without overlap (step() broadcasts per parameter);
//   O. DDP + ZeRO(overlapWithDdp) with hookWithZeroStep;
//   I. DDP + ZeRO(overlapWithDdp) with hookWithZeroStepInterleaved;
//   V. DDP + ZeRO without overlap, parametersAsBucketView (one broadcast per
//      rank: separates the collective count from the overlap).
// A step is zeroGrad + forward + backward + step(). Prints, per rank, the
// medians of `kRepeats` runs of `kIters` steps of each (after 20 warm-up steps,
// which include DDP's bucket rebuild and ZeRO's two non-updating iterations).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "runtime/ddp/comm_hooks/default_hooks.hpp"
#include "runtime/zero/zero_ddp_hook.hpp"
#include "tests/support/test_groups.hpp"
#include "tests/zero/zero_test_util.hpp"

namespace distlab::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kIters = 200;
constexpr int kRepeats = 5;

struct Variant {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<ddp::DistributedDataParallel> ddp;
  std::unique_ptr<zero::ZeroRedundancyOptimizer> opt;
  std::vector<double> us;
};

// overlap: 0 none, 1 hookWithZeroStep, 2 interleaved, 3 none with bucket view.
Variant makeVariant(const comm::ProcessGroupPtr& group, int overlap) {
  Variant v;
  v.model = makeModel(ModelKind::kMlp);
  ddp::DDPOptions o;
  o.bucketCapMb = 0.0005;
  v.ddp = std::make_unique<ddp::DistributedDataParallel>(v.model, group, o);
  v.opt = std::make_unique<zero::ZeroRedundancyOptimizer>(
      v.model->parameters(), optim::optimizerFactory("adam"), group,
      zero::ZeroOptions{.parametersAsBucketView = overlap == 3,
                        .overlapWithDdp = overlap == 1 || overlap == 2},
      optim::Options{{"lr", 1e-3}});
  if (overlap == 1) {
    v.ddp->registerCommHook(group, zero::hookWithZeroStep(ddp::allreduceHook, *v.ddp, *v.opt));
  } else if (overlap == 2) {
    v.ddp->registerCommHook(
        group, zero::hookWithZeroStepInterleaved(ddp::allreduceHook, *v.ddp, *v.opt));
  }
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST(ZeroOverlapBench, StepTime) {
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto group = makeTestGroup(ctx, "shm", "bench", std::chrono::seconds(30));
    std::vector<Variant> variants;
    for (int overlap = 0; overlap < 4; ++overlap) variants.push_back(makeVariant(group, overlap));
    auto steps = [&](Variant& v, int n) {
      for (int i = 0; i < n; ++i) {
        v.opt->zeroGrad();
        zeroBackwardStep(*v.ddp, ctx, i % 2);
        v.opt->step();
      }
    };
    for (auto& v : variants) steps(v, 20);
    for (auto& v : variants) EXPECT_TRUE(v.opt->overlapWithDdp() ? v.opt->overlapInitialized() : true);
    for (int rep = 0; rep < kRepeats; ++rep) {
      for (auto& v : variants) {
        const auto t0 = Clock::now();
        steps(v, kIters);
        v.us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() /
                       kIters);
      }
    }
    const double n = median(variants[0].us);
    auto ratio = [&](size_t i) { return median(variants[i].us) / n; };
    std::printf("ZERO_OVERLAP_STEP rank %d: N no overlap %.0f us, V no overlap bucket view %.0f us "
                "(%.2fx), O hookWithZeroStep %.0f us (%.2fx), I interleaved %.0f us (%.2fx) "
                "(median of %d x %d steps; %zu DDP buckets)\n",
                ctx.rank, n, median(variants[3].us), ratio(3), median(variants[1].us), ratio(1),
                median(variants[2].us), ratio(2), kRepeats, kIters,
                variants[1].ddp->loggingData().rebuiltBucketSizes.size());
  }, {.timeout = std::chrono::seconds(300)});
}

}  // namespace
}  // namespace distlab::testing
