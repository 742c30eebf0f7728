// DDP under tracing (runtime/core/trace.hpp) with an emulated link, two rank
// processes: the trace is well formed and nested per track, has the spans the
// runtime promises (forward/backward per module, buckets, collectives,
// optimizer step), and agrees with DDP's own timing records (Note [DDP
// timing]): every bucket's collective lies within its launch and completion,
// backward compute within DDP's backward window, the bucket wait after it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <set>

#include "emulator/link/link_backend.hpp"
#include "emulator/trace/overlap_metrics.hpp"
#include "emulator/trace/trace_merge.hpp"
#include "runtime/autograd/engine.hpp"
#include "runtime/core/trace.hpp"
#include "runtime/core/trace_json.hpp"
#include "runtime/optim/sgd.hpp"
#include "tests/ddp/ddp_test_util.hpp"

namespace distlab::testing {
namespace {

struct StepRecord {
  ddp::IterationTiming timing;
  std::vector<ddp::BucketTiming> buckets;
};

std::vector<const trace::Event*> named(const trace::Snapshot& s, const std::string& prefix) {
  std::vector<const trace::Event*> out;
  for (const auto& e : s.events) {
    if (e.name.rfind(prefix, 0) == 0) out.push_back(&e);
  }
  return out;
}

// The comm spans ('b' with its 'e') of the allreduces that began in [from, to].
std::vector<std::pair<int64_t, int64_t>> allreducesIn(const trace::Snapshot& s, int64_t from,
                                                      int64_t to) {
  std::map<uint64_t, std::pair<int64_t, int64_t>> byId;
  for (const auto& e : s.events) {
    if (e.category != trace::Category::kComm || e.name.rfind("allreduce #", 0) != 0) continue;
    if (e.phase == 'b') byId[e.id].first = e.tsNs;
    if (e.phase == 'e') byId[e.id].second = e.tsNs;
  }
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& [id, span] : byId) {
    if (span.first >= from && span.first <= to) out.push_back(span);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void checkAgainstDdpTiming(const trace::Snapshot& s, const std::vector<StepRecord>& steps) {
  for (size_t n = 1; n < steps.size(); ++n) {  // step 0 also syncs the rebuilt buckets
    const auto& t = steps[n].timing;
    auto comms = allreducesIn(s, t.backwardCommStartNs, t.backwardCommEndNs);
    ASSERT_EQ(comms.size(), steps[n].buckets.size()) << "step " << n;
    auto buckets = steps[n].buckets;
    std::sort(buckets.begin(), buckets.end(),
              [](const auto& a, const auto& b) { return a.launchedNs < b.launchedNs; });
    for (size_t b = 0; b < buckets.size(); ++b) {
      EXPECT_GE(comms[b].first, buckets[b].launchedNs) << "step " << n << " bucket " << b;
      EXPECT_LE(comms[b].second, buckets[b].completedNs) << "step " << n << " bucket " << b
          << " comm [" << comms[b].first << ", " << comms[b].second << "] bucket launched "
          << buckets[b].launchedNs << " ready " << buckets[b].readyNs << " completed "
          << buckets[b].completedNs << " index " << buckets[b].index << " comm end "
          << t.backwardCommEndNs;
    }
    for (const auto* e : named(s, "backward ")) {
      if (e->tsNs < t.backwardComputeStartNs || e->tsNs > t.backwardCommEndNs) continue;
      EXPECT_LE(e->tsNs + e->durNs, t.backwardComputeEndNs) << e->name << " step " << n;
    }
    bool waited = false;
    for (const auto* e : named(s, "ddp wait for buckets")) {
      if (e->tsNs < t.backwardComputeEndNs || e->tsNs > t.backwardCommEndNs) continue;
      EXPECT_LE(e->tsNs + e->durNs, t.backwardCommEndNs);
      waited = true;
    }
    EXPECT_TRUE(waited) << "step " << n;
  }
}

void checkSpansPresent(const trace::Snapshot& s) {
  for (const char* name : {"forward layers.0", "backward layers.0", "forward Mlp",
                           "optimizer step", "bucket 0 ready", "launch bucket 0",
                           "bucket 0 complete", "ddp wait for buckets", "grad ready 0",
                           "issue allreduce #", "start allreduce #", "end allreduce #",
                           "link allreduce #", "step 3"}) {
    EXPECT_FALSE(named(s, name).empty()) << "no event named " << name;
  }
  std::set<std::string> tracks;
  std::map<uint32_t, std::string> trackName;
  for (const auto& t : s.tracks) {
    tracks.insert(t.name);
    trackName[t.id] = t.name;
  }
  for (const char* track : {"compute", "link timer", "comm ddp_trace", "link ddp_trace"}) {
    EXPECT_TRUE(tracks.count(track)) << "no track " << track;
  }
  // A collective starts on the thread that ran it: the group's progress thread,
  // or the compute thread when its wait ran the queued operation itself (Note
  // [Waiting helps]) -- which of the two is a race, so either is right, and a
  // run may have no progress-thread event at all.
  for (const auto* e : named(s, "start allreduce #")) {
    const std::string& on = trackName[e->track];
    EXPECT_TRUE(on == "compute" || on == "progress shm:ddp_trace") << e->name << " on " << on;
  }
}

TEST(DdpTraceTest, TraceAgreesWithDdpTiming) {
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    emulator::installLinkEmulation(emulator::LinkModel{"", 300, 0.05});
    auto group = makeGroup(ctx, "ddp_trace");
    auto model = makeModel(ModelKind::kMlp);
    nn::labelModulesForTrace(*model);
    ddp::DDPOptions o;
    o.bucketCapMb = 0.001;  // a bucket per parameter or two
    ddp::DistributedDataParallel ddp(model, group, o);
    optim::SgdOptions so;
    so.lr = 0.05;
    optim::SGD opt(ddp.module().parameters(), so);
    trace::nameThisThread("compute");
    trace::start();
    std::vector<StepRecord> steps;
    for (int step = 0; step < 4; ++step) {
      trace::Span span(trace::Category::kStep, "step ", std::to_string(step));
      Batch b = shard(globalBatch(ModelKind::kMlp, 8, step), ctx.rank, 4);
      autograd::backward(lossOf(ModelKind::kMlp, ddp.call({b.x})[0], b.y));
      opt.step();
      opt.zeroGrad();
      steps.push_back({ddp.reducer()->lastIteration(), ddp.reducer()->lastBucketTimings()});
    }
    trace::stop();
    trace::Snapshot s = trace::snapshot();
    EXPECT_EQ(s.dropped, 0u);
    checkSpansPresent(s);
    checkAgainstDdpTiming(s, steps);
    auto doc = nlohmann::json::parse(trace::chromeTraceJson(s, {ctx.rank, "rank", 0, 0}));
    auto problems = emulator::nestingProblems(doc);
    EXPECT_TRUE(problems.empty()) << problems.front();
    auto summary = emulator::summarizeByRank(emulator::stepOverlaps(doc)).at(ctx.rank);
    EXPECT_EQ(summary.steps, 2);  // 4 steps, 2 of warm-up
    EXPECT_GT(summary.commUs, 0);
    EXPECT_GT(summary.computeUs, 0);
    EXPECT_LE(summary.exposedCommUs, summary.commUs);
    EXPECT_LE(summary.computeUs + summary.exposedCommUs, summary.stepUs * (1 + 1e-9));
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(DdpTraceTest, NothingIsRecordedWhenOff) {
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    trace::stop();
    trace::clear();
    auto group = makeGroup(ctx, "ddp_untraced");
    auto model = makeModel(ModelKind::kMlp);
    ddp::DistributedDataParallel ddp(model, group);
    Batch b = shard(globalBatch(ModelKind::kMlp, 8, 0), ctx.rank, 4);
    autograd::backward(lossOf(ModelKind::kMlp, ddp.call({b.x})[0], b.y));
    EXPECT_TRUE(trace::snapshot().events.empty());
    group->shutdown(std::chrono::seconds(5));
  });
}

}  // namespace
}  // namespace distlab::testing
