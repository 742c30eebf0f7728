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
  nlohmann::json noPair = sampleTrace();
  for (auto& e : noPair["traceEvents"]) {
    if (e.value("name", "") == "allreduce #1") e["name"] = "send #1";
  }
  expectBad(noPair, "names no pair 'SRC->DST'");
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

// Note [Padded shards in the trace]: the sample's all-gather as FSDP traces a
// 128 x 128 weight and its 128 biases in float32 at world 2: 2 x 64 rows of
// 512 + 4 bytes = 66,048 bytes gathered. At world 4 nothing is padded
// (66,048); at 256 every rank holds one padded row of each (132,096 bytes).
TEST(TraceProgram, AnFsdpLayoutSizesItsCollectivesWithTheirPadding) {
  nlohmann::json trace = sampleTrace();
  for (auto& e : trace["traceEvents"]) {
    if (e.value("name", "") != "_allgather_base #2" || e.value("ph", "") != "b") continue;
    e["args"]["bytes"] = 33024;  // one rank's shard
    e["args"]["shard_rows"] = {128, 128};
    e["args"]["row_bytes"] = {512, 4};
  }
  const TracedRun run = readTracedRun(trace);
  ASSERT_EQ(run.shardLayouts.count(0), 1u);  // the all-gather sorts first
  EXPECT_EQ(run.collectives[0].bytes, 66048);
  const Topology t = parseTopology(distlab::testing::kSampleTopology);
  EXPECT_EQ(scaleTracedRun(run, 4, t).collectives[0].bytes, 66048);
  EXPECT_EQ(scaleTracedRun(run, 256, t).collectives[0].bytes, 132096);
  EXPECT_EQ(scaleTracedRun(run, 256, t).collectives[1].bytes, 4'000'000);  // all_reduce: as traced

  for (auto& e : trace["traceEvents"]) {
    if (e.value("name", "") == "_allgather_base #2" && e.value("ph", "") == "b") {
      e["args"]["row_bytes"] = {512};  // one entry short
    }
  }
  try {
    readTracedRun(trace);
    ADD_FAILURE() << "a malformed shard layout accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("malformed shard layout"), std::string::npos) << e.what();
  }
}

// A two-stage pipeline's step as `distlab run --trace` writes it (us): rank 0
// computes 4 ms, sends 2 MB to rank 1 (a blocking send: a "wait for send"
// span, done at 5 ms), computes to 10 ms; rank 1 posts the receive at 0,
// waits for it until 5 ms, computes to 10 ms. `senderSide`/`receiverSide`
// false leave that side's events out.
nlohmann::json pipelineTrace(bool senderSide = true, bool receiverSide = true) {
  using nlohmann::json;
  json events = json::array();
  const auto rank = [&](int pid, const std::string& op, double issueUs, bool present) {
    const auto ev = [&](json e) {
      e["pid"] = pid;
      events.push_back(e);
    };
    ev({{"ph", "M"}, {"name", "thread_name"}, {"tid", 1}, {"args", {{"name", "compute"}}}});
    ev({{"ph", "X"}, {"cat", "step"}, {"name", "step 0"}, {"tid", 1}, {"ts", 0}, {"dur", 10000}});
    if (!present) return;
    const std::string label = op + " 0->1 #1";
    ev({{"ph", "i"}, {"cat", "mark"}, {"name", "issue " + label}, {"tid", 1}, {"ts", issueUs},
        {"args", {{"group", "w1_default"}}}});
    ev({{"ph", "b"}, {"cat", "comm"}, {"name", label}, {"tid", 7}, {"ts", issueUs}, {"id", "0x1"},
        {"args", {{"group", "w1_default"}, {"seq", 1}, {"bytes", 2000000}, {"ok", true}}}});
    ev({{"ph", "e"}, {"cat", "comm"}, {"name", label}, {"tid", 7}, {"ts", 5000}, {"id", "0x1"}});
    ev({{"ph", "X"}, {"cat", "wait"}, {"name", "wait for " + op}, {"tid", 1}, {"ts", issueUs},
        {"dur", 5000 - issueUs}});
  };
  rank(0, "send", 4000, senderSide);
  rank(1, "recv", 0, receiverSide);
  return json{{"traceEvents", events}};
}

double stepOf(const SimResult& r, int rank) {
  return r.ranks[rank].marks.at("step end")[0] - r.ranks[rank].marks.at("step begin")[0];
}

TEST(TraceProgram, ASendAndItsReceiveAreOneMessageThatStartsWhenBothJoined) {
  const TracedRun run = readTracedRun(pipelineTrace());
  ASSERT_EQ(run.collectives.size(), 1u);
  EXPECT_EQ(run.collectives[0].op, comm::OpType::kSend);
  EXPECT_EQ(run.collectives[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(run.collectives[0].bytes, 2'000'000);
  EXPECT_EQ(run.collectives[0].name, "send 0->1 #1 on w1_default");
  // Both ranks on one node at 1 GB/s, no latency: the message costs 2 ms from
  // 4 ms, when the sender joins; each rank then computes 5 ms: steps of 11 ms.
  // On two nodes at 0.5 GB/s it costs 4 ms: 13 ms. Exact decimals: 1e-9 s is
  // far above the rounding of microseconds read as doubles.
  const SimResult oneNode = simulate(
      scaleTracedRun(run, 2, parseTopology("ranks_per_node=2,intra=0:1,inter=0:1")));
  const SimResult twoNodes = simulate(
      scaleTracedRun(run, 2, parseTopology("ranks_per_node=1,intra=0:1,inter=0:0.5")));
  for (int r = 0; r < 2; ++r) {
    EXPECT_NEAR(stepOf(oneNode, r), 11e-3, 1e-9) << r;
    EXPECT_NEAR(stepOf(twoNodes, r), 13e-3, 1e-9) << r;
  }
  EXPECT_NEAR(oneNode.ranks[1].blockedS, 6e-3, 1e-9);  // the receive posted at 0
}

TEST(TraceProgram, MessagesAreRefusedAtAnotherWorldOrWithOneSideMissing) {
  const Topology t = parseTopology("ranks_per_node=2,intra=0:1,inter=0:1");
  try {
    scaleTracedRun(readTracedRun(pipelineTrace()), 4, t);
    ADD_FAILURE() << "a pipeline trace scaled to world 4";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("send 0->1 #1 on w1_default is point-to-point"),
              std::string::npos)
        << e.what();
  }
  for (const bool sender : {false, true}) {
    try {
      readTracedRun(pipelineTrace(sender, !sender));
      ADD_FAILURE() << "a message with one side read";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(sender ? "only its send" : "only its receive"),
                std::string::npos)
          << e.what();
    }
  }
  nlohmann::json toItself = pipelineTrace();
  for (auto& e : toItself["traceEvents"]) {
    if (e.value("name", "").find("recv 0->1") != std::string::npos) e["pid"] = 0;
  }
  try {
    readTracedRun(toItself);
    ADD_FAILURE() << "a message to itself accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("message to itself"), std::string::npos) << e.what();
  }
  nlohmann::json anySource = pipelineTrace();
  for (auto& e : anySource["traceEvents"]) {
    if (e.value("name", "") == "recv 0->1 #1") e["name"] = "recvanysource #0";
  }
  try {
    readTracedRun(anySource);
    ADD_FAILURE() << "a receive from any source accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("receive from any source"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace distlab::emulator
