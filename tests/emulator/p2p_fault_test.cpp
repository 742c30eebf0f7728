// Faults on point-to-point operations (Note [Point-to-point triggers] in
// emulator/faults/fault_plan.hpp): which send or receive a trigger counts and
// fires on, what the scenario parser refuses, and the diagnosis that matches
// messages between the ranks' event logs. The multi-process behaviour is in
// scenarios/collectives/p2p_*.toml.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/faults/fault_plan.hpp"
#include "emulator/scenario/diagnosis.hpp"
#include "emulator/scenario/scenario_parser.hpp"
#include "runtime/core/errors.hpp"
#include "tests/emulator/diagnosis_inputs.hpp"

namespace distlab::emulator {
namespace {

FaultSpec p2pFault(const std::string& kind, const std::string& on, int peer, uint64_t atSeq) {
  FaultSpec f;
  f.kind = kind;
  f.ranks = {0};
  f.on = on;
  f.peer = peer;
  f.atSeq = atSeq;
  return f;
}

FaultPlan planOf(std::vector<FaultSpec> faults) {
  return FaultPlan(faults, 0, std::make_shared<EventLog>(""), std::chrono::milliseconds(1000));
}

TEST(PointToPointTrigger, CountsOnlyItsKindAndPeer) {
  FaultPlan plan = planOf({p2pFault("hang", "send", 2, 2)});
  EXPECT_EQ(plan.onPointToPoint(true, 1), nullptr);   // another peer
  EXPECT_EQ(plan.onPointToPoint(false, 2), nullptr);  // a receive
  EXPECT_EQ(plan.onCollective(1), nullptr);           // collectives are not counted
  EXPECT_EQ(plan.onPointToPoint(true, 2), nullptr);   // the first send to 2
  const FaultSpec* f = plan.onPointToPoint(true, 2);  // the second
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->kind, "hang");
  EXPECT_EQ(plan.onPointToPoint(true, 2), nullptr);   // once
}

TEST(PointToPointTrigger, AnyPeerCountsEverySendAndAStragglerSpansCount) {
  FaultSpec f = p2pFault("straggler", "recv", -1, 2);
  f.count = 2;
  f.delayMs = 1;
  FaultPlan plan = planOf({f});
  EXPECT_EQ(plan.onPointToPoint(false, 1), nullptr);
  EXPECT_NE(plan.onPointToPoint(false, -1), nullptr);  // a receive from any source counts
  EXPECT_NE(plan.onPointToPoint(false, 3), nullptr);
  EXPECT_EQ(plan.onPointToPoint(false, 1), nullptr);
}

TEST(PointToPointTrigger, AtStepFiresOnTheFirstMatchingOperationOfThatStep) {
  FaultSpec f = p2pFault("crash", "send", -1, 0);
  f.atStep = 1;
  FaultPlan plan = planOf({f});
  plan.setStep(0);
  EXPECT_EQ(plan.onPointToPoint(true, 1), nullptr);
  plan.setStep(1);
  EXPECT_TRUE(plan.stepFaults(1).empty());  // waits for its send, not the step's start
  EXPECT_EQ(plan.onPointToPoint(false, 1), nullptr);
  EXPECT_NE(plan.onPointToPoint(true, 1), nullptr);
  EXPECT_EQ(plan.onPointToPoint(true, 1), nullptr);
}

TEST(PointToPointTrigger, ACollectiveFaultIgnoresPointToPoint) {
  FaultSpec f = p2pFault("hang", "", -1, 1);
  FaultPlan plan = planOf({f});
  EXPECT_EQ(plan.onPointToPoint(true, 1), nullptr);
  EXPECT_NE(plan.onCollective(1), nullptr);
}

// A two-rank pipeline: rank 0 sends `sends` messages to rank 1, which
// receives three. Lines: header 1-3, cluster 4-5, workload 6-7, the send step
// 8-13, the recv step 14-19, the fault from line 20.
std::string pipeline(const std::string& fault, int sends = 3) {
  return "name = \"t\"\ndescription = \"d\"\ngroup = \"g\"\n"
         "[cluster]\nworld_size = 2\n[workload]\nkind = \"collectives\"\n"
         "[[workload.steps]]\nop = \"send\"\nnumel = 4\nroot = 1\nranks = [0]\nrepeat = " +
         std::to_string(sends) +
         "\n[[workload.steps]]\nop = \"recv\"\nnumel = 4\nroot = 0\nranks = [1]\nrepeat = 3\n" +
         fault + "[expect]\noutcome = \"error\"\n";
}

std::string parseError(const std::string& text) {
  try {
    parseScenarioText(text, "p2p.toml");
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

TEST(PointToPointTrigger, ParserAcceptsAndFillsTheTrigger) {
  Scenario s = parseScenarioText(
      pipeline("[[faults]]\nkind = \"hang\"\nranks = [0]\non = \"send\"\npeer = 1\nat_seq = 3\n"),
      "p2p.toml");
  ASSERT_EQ(s.faults.size(), 1u);
  EXPECT_EQ(s.faults[0].on, "send");
  EXPECT_EQ(s.faults[0].peer, 1);
  EXPECT_EQ(s.faults[0].atSeq, 3u);
  EXPECT_EQ(pointToPointCount(s, 0, "send", 1), 3u);
  EXPECT_EQ(pointToPointCount(s, 1, "recv", -1), 3u);
  EXPECT_EQ(pointToPointCount(s, 1, "send", -1), 0u);
}

struct P2PBadCase {
  const char* name;
  std::string fault;
  std::string message;  // "p2p.toml:<line>: <text>" prefix and text
};

class PointToPointMistake : public ::testing::TestWithParam<P2PBadCase> {};

TEST_P(PointToPointMistake, NamesFileLineAndFix) {
  const std::string what = parseError(pipeline(GetParam().fault));
  EXPECT_NE(what.find(GetParam().message), std::string::npos)
      << GetParam().name << ": " << (what.empty() ? "accepted" : what);
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, PointToPointMistake,
    ::testing::Values(
        P2PBadCase{"unknown direction",
                   "[[faults]]\nkind = \"hang\"\nranks = [0]\non = \"gather\"\nat_seq = 1\n",
                   "p2p.toml:23: 'on' = \"gather\" is not valid; use one of: send, recv"},
        P2PBadCase{"peer without on",
                   "[[faults]]\nkind = \"hang\"\nranks = [0]\npeer = 1\nat_seq = 1\n",
                   "p2p.toml:23: peer needs on = \"send\" or \"recv\""},
        P2PBadCase{"peer out of range",
                   "[[faults]]\nkind = \"hang\"\nranks = [0]\non = \"send\"\npeer = 2\nat_seq = 1\n",
                   "p2p.toml:24: 'peer' = 2 is out of range [0, 1]"},
        P2PBadCase{"never reached",
                   "[[faults]]\nkind = \"hang\"\nranks = [0]\non = \"send\"\nat_seq = 4\n",
                   "p2p.toml:24: at_seq = 4 never runs on rank 0: it issues 3 sends on the "
                   "world group"},
        P2PBadCase{"never reached with that peer",
                   "[[faults]]\nkind = \"crash\"\nranks = [1]\non = \"send\"\npeer = 0\n"
                   "at_seq = 1\n",
                   "at_seq = 1 never runs on rank 1: it issues 0 sends with peer 0"},
        P2PBadCase{"a mismatch with no point-to-point form",
                   "[[faults]]\nkind = \"mismatch\"\nranks = [0]\non = \"send\"\nat_seq = 1\n"
                   "mismatch = \"root\"\n",
                   "p2p.toml:25: mismatch = \"root\" has no point-to-point form; on a send use "
                   "shape or dtype"},
        P2PBadCase{"an engine fault",
                   "[[faults]]\nkind = \"bit_flip\"\nranks = [0]\non = \"send\"\nat_step = 1\n",
                   "unknown key 'on' in [[faults]] of kind 'bit_flip'"},
        P2PBadCase{"no trigger",
                   "[[faults]]\nkind = \"hang\"\nranks = [0]\non = \"send\"\n",
                   "p2p.toml:20: fault 'hang' needs a trigger: at_seq = N (collective sequence "
                   "number, or the n-th send/recv with on = \"send\"|\"recv\", from 1)"}),
    [](const ::testing::TestParamInfo<P2PBadCase>& param) {
      std::string n = param.param.name;
      for (char& c : n) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

TEST(PointToPointTrigger, ATrainingWorkloadIssuesNoPointToPoint) {
  const std::string text =
      "name = \"t\"\ndescription = \"d\"\ngroup = \"g\"\n[cluster]\nworld_size = 2\n"
      "[workload]\nkind = \"training\"\nsteps = 3\n"
      "[[faults]]\nkind = \"hang\"\nranks = [0]\non = \"send\"\nat_step = 1\n"
      "[expect]\noutcome = \"timeout\"\n";
  EXPECT_NE(parseError(text).find("p2p.toml:12: on = \"send\" needs a workload that issues "
                                   "sends (a collective script or a program); the training "
                                   "workload issues no point-to-point operation"),
            std::string::npos)
      << parseError(text);
}

// The diagnosis of rule 2b, from event logs written as FaultBackend writes them.
P2PRecord record(bool isSend, int peer, const std::string& shape, bool done, bool failed = false) {
  P2PRecord p;
  p.isSend = isSend;
  p.peer = peer;
  p.shape = shape;
  p.done = done;
  p.failed = failed;
  return p;
}

Diagnosis diagnoseTwoRanks(std::vector<RankEvents> events) {
  Scenario s;
  s.worldSize = 2;
  // Both ranks failed with a timeout, rank 1 (the receiver) first.
  std::vector<std::optional<RankResult>> results(2);
  for (int r = 0; r < 2; ++r) {
    results[r] = test_inputs::failedRank(r, "DistTimeoutError", "", r == 1 ? 10 : 20);
  }
  return diagnose(s, test_inputs::failedExits(2), results, events, 30);
}

TEST(PointToPointDiagnosis, AReceiveWhoseMessageWasNeverSentNamesTheSender) {
  std::vector<RankEvents> events(2);
  events[0].p2p = {record(true, 1, "4 float32", true), record(true, 1, "4 float32", true)};
  events[1].p2p = {record(false, 0, "4 float32", true), record(false, 0, "4 float32", true),
                   record(false, 0, "4 float32", true, true)};
  Diagnosis d = diagnoseTwoRanks(events);
  EXPECT_EQ(d.culprits, std::vector<int>{0});
  EXPECT_NE(d.text.find("rank 0 never sent message 3 to rank 1 (tag 0); rank 1's recv waited "
                        "for it"), std::string::npos) << d.text;
}

TEST(PointToPointDiagnosis, AMessageOfTheWrongSizeNamesBothRanks) {
  std::vector<RankEvents> events(2);
  events[0].p2p = {record(true, 1, "5 float32", true)};
  events[1].p2p = {record(false, 0, "4 float32", true, true)};
  Diagnosis d = diagnoseTwoRanks(events);
  EXPECT_EQ(d.culprits, (std::vector<int>{0, 1}));
  EXPECT_NE(d.text.find("message 1 from rank 0 to rank 1 (tag 0) differs: sent 5 float32, "
                        "received into 4 float32"), std::string::npos) << d.text;
}

TEST(PointToPointDiagnosis, MatchedMessagesNameNobody) {
  std::vector<RankEvents> events(2);
  events[0].p2p = {record(true, 1, "4 float32", true)};
  events[1].p2p = {record(false, 0, "4 float32", true)};
  EXPECT_TRUE(diagnoseTwoRanks(events).culprits.empty());
}

}  // namespace
}  // namespace distlab::emulator
