// Overlap metrics (emulator/trace/overlap_metrics.hpp) on synthetic traces with
// known answers, a RapidCheck property against a brute-force count on a
// 1-microsecond grid, and the merge/nesting helpers (trace_merge.hpp).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <fstream>

#include "emulator/trace/overlap_metrics.hpp"
#include "emulator/trace/trace_merge.hpp"
#include "runtime/core/errors.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;

json span(const char* cat, const std::string& name, double ts, double dur, int pid = 0,
          int tid = 1) {
  return {{"ph", "X"}, {"cat", cat}, {"name", name}, {"ts", ts}, {"dur", dur}, {"pid", pid},
          {"tid", tid}};
}

void addComm(json& events, double begin, double end, const std::string& id, int pid = 0) {
  events.push_back({{"ph", "b"}, {"cat", "comm"}, {"name", "allreduce"}, {"id", id},
                    {"ts", begin}, {"pid", pid}, {"tid", 9}});
  events.push_back({{"ph", "e"}, {"cat", "comm"}, {"name", "allreduce"}, {"id", id},
                    {"ts", end}, {"pid", pid}, {"tid", 9}});
}

// step [0, 100]; compute [0, 40] and [50, 70] (a nested child too); comm
// [30, 60] and [65, 90]: comm = 55, overlapped = 10 + 10 + 5 = 25, exposed 30.
json knownTrace() {
  json ev = json::array();
  ev.push_back(span("step", "step 0", 0, 100));
  ev.push_back(span("compute", "forward", 0, 40));
  ev.push_back(span("compute", "forward fc1", 10, 20));  // nested: counted once
  ev.push_back(span("compute", "backward", 50, 20));
  ev.push_back(span("wait", "ddp wait", 70, 30));         // not compute
  addComm(ev, 30, 60, "0x1");
  addComm(ev, 65, 90, "0x2");
  return {{"traceEvents", ev}};
}

TEST(OverlapMetrics, KnownAnswer) {
  auto steps = stepOverlaps(knownTrace());
  ASSERT_EQ(steps.size(), 1u);
  const StepOverlap& s = steps[0];
  EXPECT_DOUBLE_EQ(s.stepUs, 100);
  EXPECT_DOUBLE_EQ(s.computeUs, 60);
  EXPECT_DOUBLE_EQ(s.commUs, 55);
  EXPECT_DOUBLE_EQ(s.exposedCommUs, 30);
  EXPECT_DOUBLE_EQ(s.backwardUs, 20);  // "backward" [50, 70]; the wait after it is not
  EXPECT_DOUBLE_EQ(s.commAfterArrivalUs, 55);  // one rank: nobody to wait for
  EXPECT_DOUBLE_EQ(s.exposedAfterArrivalUs, 30);
  EXPECT_DOUBLE_EQ(s.overlapRatio(), 25.0 / 55.0);
  EXPECT_DOUBLE_EQ(s.computeShare(), 0.6);
  EXPECT_DOUBLE_EQ(s.exposedShare(), 0.3);
}

TEST(OverlapMetrics, ClipsToStepsAndSkipsWarmup) {
  json ev = json::array();
  ev.push_back(span("step", "step 0", 0, 100));
  ev.push_back(span("step", "step 1", 100, 50));
  ev.push_back(span("compute", "c", 90, 20));  // 10 in each step
  addComm(ev, 95, 130, "0x1");                 // 5 in step 0, 30 in step 1
  auto steps = stepOverlaps({{"traceEvents", ev}});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_DOUBLE_EQ(steps[0].commUs, 5);
  EXPECT_DOUBLE_EQ(steps[0].exposedCommUs, 0);
  EXPECT_DOUBLE_EQ(steps[1].commUs, 30);
  EXPECT_DOUBLE_EQ(steps[1].exposedCommUs, 20);
  auto sum = summarizeByRank(steps, 1);
  ASSERT_EQ(sum.size(), 1u);
  EXPECT_EQ(sum[0].steps, 1);
  EXPECT_DOUBLE_EQ(sum[0].overlapRatio(), 10.0 / 30.0);
  EXPECT_DOUBLE_EQ(sum[0].meanStepUs(), 50);
}

// Two steps of [backward fc1, backward fc0]: step 0 launches one bucket during
// fc1 and one after backward (in the wait's place: the late-launch shape),
// step 1 launches two during backward but waits inside it (the wait-for-each
// shape). The summary keeps the fewest launches and the most waits.
TEST(OverlapMetrics, LaunchesAndWaitsBeforeBackwardEnds) {
  json ev = json::array();
  for (double t0 : {0.0, 100.0}) {
    ev.push_back(span("step", "step", t0, 100));
    ev.push_back(span("compute", "backward fc1", t0 + 10, 20));
    ev.push_back(span("compute", "backward fc0", t0 + 40, 20));
    ev.push_back(span("ddp", "launch bucket 0", t0 + 25, 1));
  }
  ev.push_back(span("ddp", "launch bucket 1", 70, 1));    // step 0: after backward
  ev.push_back(span("wait", "ddp wait", 75, 10));         // step 0: after backward
  ev.push_back(span("ddp", "launch bucket 1", 145, 1));   // step 1: in fc0's backward
  ev.push_back(span("wait", "work wait", 132, 5));        // step 1: between the layers
  auto steps = stepOverlaps(ev);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].launchesInBackward, 1);
  EXPECT_EQ(steps[0].waitsInBackward, 0);
  EXPECT_EQ(steps[1].launchesInBackward, 2);
  EXPECT_EQ(steps[1].waitsInBackward, 1);
  auto sum = summarizeByRank(steps, 0);
  EXPECT_EQ(sum.at(0).minLaunchesInBackward, 1);
  EXPECT_EQ(sum.at(0).maxWaitsInBackward, 1);
}

// A wait inside a compute span (FSDP's all-gather wait in a parent module's
// forward) is not compute: step [0, 100], compute [0, 80] with a wait
// [20, 50] inside, comm [10, 50]: compute 50, exposed 30.
TEST(OverlapMetrics, WaitsInsideComputeSpansAreNotCompute) {
  json ev = json::array({span("step", "step 0", 0, 100), span("compute", "forward", 0, 80),
                         span("wait", "fsdp wait all-gather", 20, 30)});
  addComm(ev, 10, 50, "0x1");
  auto steps = stepOverlaps(ev);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_DOUBLE_EQ(steps[0].computeUs, 50);
  EXPECT_DOUBLE_EQ(steps[0].exposedCommUs, 30);
  const std::vector<Interval> left = subtract({{0, 10}, {20, 40}}, {{5, 25}, {30, 35}});
  ASSERT_EQ(left.size(), 3u);
  EXPECT_DOUBLE_EQ(left[0].end, 5);
  EXPECT_DOUBLE_EQ(left[1].begin, 25);
  EXPECT_DOUBLE_EQ(left[2].begin, 35);
}

TEST(OverlapMetrics, NoCommunicationIsFullyOverlapped) {
  json ev = json::array({span("step", "step 0", 0, 10), span("compute", "c", 0, 5)});
  auto steps = stepOverlaps(ev);  // a bare event array works too
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_DOUBLE_EQ(steps[0].overlapRatio(), 1.0);
  EXPECT_DOUBLE_EQ(steps[0].exposedShare(), 0.0);
}

TEST(OverlapMetrics, RanksAreSeparate) {
  json ev = json::array();
  for (int pid : {0, 1}) ev.push_back(span("step", "step 0", 0, 100, pid));
  ev.push_back(span("compute", "c", 0, 100, 0));  // rank 0 computes throughout
  addComm(ev, 0, 50, "0x1", 0);
  addComm(ev, 0, 50, "0x1", 1);                    // same id, other rank: separate
  auto sum = summarizeByRank(stepOverlaps(ev), 0);
  EXPECT_DOUBLE_EQ(sum.at(0).exposedCommUs, 0);
  EXPECT_DOUBLE_EQ(sum.at(1).exposedCommUs, 50);
}

// Note [Waiting for the last rank]: rank 0 begins "allreduce #1" at 10, rank 1
// at 40; both end at 60. Rank 0 computes [0, 20]. Its exposed 40 holds 20 of
// waiting for rank 1 ([20, 40]); from rank 1's arrival on, 20 of 20 are exposed.
TEST(OverlapMetrics, WaitingForTheLastRankIsSeparated) {
  json ev = json::array();
  for (int pid : {0, 1}) {
    ev.push_back(span("step", "step 0", 0, 100, pid));
    ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", 9},
                  {"args", {{"name", "comm g"}}}});
    ev.push_back({{"ph", "b"}, {"cat", "comm"}, {"name", "allreduce #1"}, {"id", "0x1"},
                  {"ts", pid == 0 ? 10 : 40}, {"pid", pid}, {"tid", 9}});
    ev.push_back({{"ph", "e"}, {"cat", "comm"}, {"name", "allreduce #1"}, {"id", "0x1"},
                  {"ts", 60}, {"pid", pid}, {"tid", 9}});
  }
  ev.push_back(span("compute", "c", 0, 20, 0));
  ev.push_back(span("compute", "c", 0, 45, 1));
  auto sum = summarizeByRank(stepOverlaps(ev), 0);
  EXPECT_DOUBLE_EQ(sum.at(0).commUs, 50);
  EXPECT_DOUBLE_EQ(sum.at(0).exposedCommUs, 40);
  EXPECT_DOUBLE_EQ(sum.at(0).commAfterArrivalUs, 20);
  EXPECT_DOUBLE_EQ(sum.at(0).exposedAfterArrivalUs, 20);
  EXPECT_DOUBLE_EQ(sum.at(1).commUs, 20);  // rank 1 arrived last: nothing to cut
  EXPECT_DOUBLE_EQ(sum.at(1).exposedCommUs, 15);
  EXPECT_DOUBLE_EQ(sum.at(1).commAfterArrivalUs, 20);
  EXPECT_DOUBLE_EQ(sum.at(1).exposedAfterArrivalUs, 15);
}

TEST(OverlapMetrics, MalformedTracesAreNamed) {
  json noTs = json::array({{{"ph", "X"}, {"cat", "compute"}, {"pid", 0}, {"dur", 1}}});
  EXPECT_THROW(
      {
        try {
          stepOverlaps(noTs);
        } catch (const ValueError& e) {
          EXPECT_NE(std::string(e.what()).find("'ts'"), std::string::npos) << e.what();
          throw;
        }
      },
      ValueError);
  json endOnly = json::array({{{"ph", "e"}, {"cat", "comm"}, {"pid", 0}, {"ts", 1}, {"id", "0x5"}}});
  EXPECT_THROW(stepOverlaps(endOnly), ValueError);
}

// Brute force on a 1 us grid: integer endpoints make both exact.
RC_GTEST_PROP(OverlapMetricsProperty, MatchesGridCount, ()) {
  const int horizon = 200;
  auto interval = rc::gen::apply(
      [](int a, int len) { return std::make_pair(a, len); }, rc::gen::inRange(0, horizon),
      rc::gen::inRange(0, 60));
  const auto compute = *rc::gen::container<std::vector<std::pair<int, int>>>(interval);
  const auto comm = *rc::gen::container<std::vector<std::pair<int, int>>>(interval);
  const int stepBegin = *rc::gen::inRange(0, horizon / 2);
  const int stepLen = *rc::gen::inRange(1, horizon);
  json ev = json::array({span("step", "step 0", stepBegin, stepLen)});
  std::vector<int> c(2 * horizon + 60, 0), m(2 * horizon + 60, 0);
  for (const auto& [a, len] : compute) {
    ev.push_back(span("compute", "c", a, len));
    for (int t = a; t < a + len; ++t) c[t] = 1;
  }
  int id = 0;
  for (const auto& [a, len] : comm) {
    addComm(ev, a, a + len, std::to_string(++id));
    for (int t = a; t < a + len; ++t) m[t] = 1;
  }
  int wantCompute = 0, wantComm = 0, wantExposed = 0;
  for (int t = stepBegin; t < stepBegin + stepLen; ++t) {
    wantCompute += c[t];
    wantComm += m[t];
    wantExposed += m[t] && !c[t];
  }
  auto steps = stepOverlaps(ev);
  RC_ASSERT(steps.size() == 1u);
  RC_ASSERT(steps[0].computeUs == wantCompute);
  RC_ASSERT(steps[0].commUs == wantComm);
  RC_ASSERT(steps[0].exposedCommUs == wantExposed);
}

TEST(TraceMerge, NestingProblemsAreFound) {
  json ok = json::array({span("compute", "parent", 0, 10), span("compute", "child", 2, 8),
                         span("compute", "next", 10, 5), span("compute", "other track", 5, 20,
                                                              0, 2)});
  EXPECT_TRUE(nestingProblems(ok).empty());
  json bad = json::array({span("compute", "a", 0, 10), span("compute", "b", 5, 10)});
  auto problems = nestingProblems(bad);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("'b'"), std::string::npos) << problems[0];
}

TEST(TraceMerge, RebasesRanksAndPlacesEventLogInstants) {
  testing::TempDir dir;
  for (int r = 0; r < 2; ++r) {
    json doc = {{"traceEvents", json::array({span("step", "step 0", 1000.0 + r, 10, 7)})},
                {"otherData", {{"clock_offset_ns", 0}, {"clock_bound_ns", 5},
                               {"anchor_wall_us", 5000}, {"anchor_mono_ns", 2'000'000}}}};
    std::ofstream(dir.path() + "/rank" + std::to_string(r) + ".trace.json") << doc.dump();
  }
  std::vector<RankTraceInput> in(3);
  for (int r = 0; r < 3; ++r) {
    in[r].rank = r;
    in[r].path = dir.path() + "/rank" + std::to_string(r) + ".trace.json";  // rank 2: none
  }
  in[2].wallInstants = {{4000, "fault crash"}};  // 1000 us before the anchor (mono 2000 us)
  json merged = mergeRankTraces(in, {{"scenario", "x"}});
  EXPECT_EQ(merged["otherData"]["clocks"].size(), 2u);
  double crashTs = -1, step1 = -1;
  for (const auto& e : merged["traceEvents"]) {
    if (e.value("name", "") == "fault crash") {
      crashTs = e["ts"];
      EXPECT_EQ(e["pid"], 2);
    }
    if (e.value("name", "") == "step 0" && e["pid"] == 1) step1 = e["ts"];
  }
  // crash at mono 1000 us = the earliest event: rebased to 0; rank 1's step at 1001.
  EXPECT_DOUBLE_EQ(crashTs, 0);
  EXPECT_DOUBLE_EQ(step1, 1);
  EXPECT_THROW(mergeRankTraces({in[2]}, {}), Error);
}

}  // namespace
}  // namespace distlab::emulator
