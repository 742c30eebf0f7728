// Programs read from a trace and laid out at another world size
// (emulator/predict/trace_program.hpp), on tests/predict/sample_trace.hpp.
#include <gtest/gtest.h>

#include <string>

#include "emulator/predict/trace_program.hpp"
#include "runtime/core/errors.hpp"
#include "tests/predict/sample_trace.hpp"

namespace distlab::emulator {
namespace {

using Kind = SimAction::Kind;
using distlab::testing::sampleTrace;

TEST(TraceProgram, EachRankBecomesBusyTimeIssuesAndWaits) {
  const TracedRun run = readTracedRun(sampleTrace());
  EXPECT_EQ(run.worldSize, 2);
  ASSERT_EQ(run.collectives.size(), 2u);
  ASSERT_EQ(run.tracedStepS.size(), 1u);
  EXPECT_NEAR(run.tracedStepS[0], 0.010, 1e-12);
  // Collectives in key order: "_allgather_base #2" sorts before "allreduce #1".
  EXPECT_EQ(run.collectives[0].op, comm::OpType::kAllgatherBase);
  EXPECT_EQ(run.collectives[0].bytes, 2'000'000);  // the gathered total: 2 x the shard
  EXPECT_EQ(run.collectives[1].op, comm::OpType::kAllreduce);
  EXPECT_EQ(run.collectives[1].bytes, 4'000'000);
  EXPECT_EQ(run.collectives[1].ranks, (std::vector<int>{0, 1}));
  const std::vector<SimAction>& p = run.programs[0];
  const std::vector<Kind> kinds = {Kind::kMark,    Kind::kCompute, Kind::kIssue, Kind::kCompute,
                                   Kind::kWait,    Kind::kCompute, Kind::kIssue, Kind::kCompute,
                                   Kind::kWait,    Kind::kCompute, Kind::kMark};
  ASSERT_EQ(p.size(), kinds.size());
  double busy = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i].kind, kinds[i]) << i;
    busy += p[i].seconds;
  }
  // Microseconds read from JSON as doubles and scaled by 1e-6: 1e-12 s is far
  // above that rounding.
  EXPECT_NEAR(busy, 0.009, 1e-12);  // the step less the 1 ms spent in the wait span
  EXPECT_EQ(p[2].collective, 1);    // the all_reduce first
  EXPECT_EQ(p[4].collective, 1);
  EXPECT_EQ(p[6].collective, 0);
}

TEST(TraceProgram, ScaledToFourRanksTheStepTakesWhatTheModelSays) {
  const TracedRun run = readTracedRun(sampleTrace());
  const SimInput in = scaleTracedRun(run, 4, parseTopology(distlab::testing::kSampleTopology));
  ASSERT_EQ(in.ranks.size(), 4u);
  EXPECT_EQ(in.collectives[1].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(in.collectives[0].bytes, 2'000'000);  // FSDP's full parameters stay the same
  const SimResult r = simulate(in);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NEAR(r.ranks[rank].marks.at("step end")[0] - r.ranks[rank].marks.at("step begin")[0],
                distlab::testing::kSampleStepAtWorld4S, 1e-9)
        << rank;
  }
}

TEST(TraceProgram, MalformedOrUnscalableTracesAreRefused) {
  const auto expectBad = [](const nlohmann::json& trace, const std::string& part) {
    try {
      readTracedRun(trace);
      ADD_FAILURE() << "accepted; expected: " << part;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expectBad(nlohmann::json::object(), "no traceEvents");
  nlohmann::json noBytes = sampleTrace();
  for (auto& e : noBytes["traceEvents"]) {
    if (e.value("ph", "") == "b") e["args"].erase("bytes");
  }
  expectBad(noBytes, "comm span without group/seq/bytes");
  nlohmann::json noStep = sampleTrace();
  auto& events = noStep["traceEvents"];
  events.erase(std::remove_if(events.begin(), events.end(),
                              [](const nlohmann::json& e) { return e.value("cat", "") == "step"; }),
               events.end());
  expectBad(noStep, "rank 0 has no step span");
  nlohmann::json p2p = sampleTrace();
  for (auto& e : p2p["traceEvents"]) {
    if (e.value("name", "") == "allreduce #1") e["name"] = "send #1";
  }
  expectBad(p2p, "point-to-point operations are not replayed");
  nlohmann::json unknown = sampleTrace();
  for (auto& e : unknown["traceEvents"]) {
    if (e.value("name", "") == "allreduce #1") e["name"] = "teleport #1";
  }
  expectBad(unknown, "unknown operation 'teleport'");
  nlohmann::json noSeq = sampleTrace();
  for (auto& e : noSeq["traceEvents"]) {
    if (e.value("name", "") == "allreduce #1") e["name"] = "allreduce #one";
  }
  expectBad(noSeq, "has no '#<seq>'");

  const TracedRun run = readTracedRun(sampleTrace());
  const Topology t = parseTopology(distlab::testing::kSampleTopology);
  EXPECT_THROW(scaleTracedRun(run, 0, t), ValueError);
  EXPECT_THROW(scaleTracedRun(run, kMaxPredictWorld + 1, t), ValueError);
  TracedRun pair = run;
  pair.worldSize = 3;  // as if a third rank took part in nothing: the groups do not span it
  pair.programs.push_back({});
  EXPECT_THROW(scaleTracedRun(pair, 6, t), ValueError);
  EXPECT_NO_THROW(scaleTracedRun(pair, 3, t));
}

}  // namespace
}  // namespace distlab::emulator
