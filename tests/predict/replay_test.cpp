// The replay (emulator/predict/simulator.hpp) on programs whose answers are
// worked out by hand: link sharing, a straggler in a dependency chain, a
// subgroup a straggler is not in, a deadlock, malformed programs.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "emulator/predict/simulator.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using Kind = SimAction::Kind;

// Exact decimals added a few times: 1e-12 s is far above double rounding.
constexpr double kTol = 1e-12;

SimAction compute(double s) { return {Kind::kCompute, s, -1, {}}; }
SimAction issue(int c) { return {Kind::kIssue, 0, c, {}}; }
SimAction wait(int c) { return {Kind::kWait, 0, c, {}}; }
SimAction mark(const std::string& label) { return {Kind::kMark, 0, -1, label}; }

// One node, no latency, 1 GB/s: a world-2 all_reduce of S bytes costs
// 2(n-1)/n S / 1e9 = S ns.
SimInput oneNode(int ranks) {
  SimInput in;
  in.topology = parseTopology("ranks_per_node=64,intra=0:1,inter=0:1");
  in.ranks.resize(ranks);
  return in;
}

SimCollective allreduce(const std::string& name, const std::string& stream, int64_t bytes,
                        std::vector<int> ranks) {
  return {name, stream, comm::OpType::kAllreduce, bytes, std::move(ranks)};
}

TEST(Replay, TwoOperationsOnTheSameLinksShareTheBandwidth) {
  SimInput in = oneNode(2);
  // Two streams, so neither waits for the other: A costs 1 s, B 0.5 s alone.
  in.collectives = {allreduce("A", "s1", 1'000'000'000, {0, 1}),
                    allreduce("B", "s2", 500'000'000, {0, 1})};
  for (auto& p : in.ranks) p = {issue(0), issue(1), wait(0), wait(1)};
  const SimResult r = simulate(in);
  // Both at half speed until B's 0.5 s of work is done at t = 1; A then has
  // 0.5 s left at full speed: it ends at 1.5.
  EXPECT_NEAR(r.collectives[1].endS, 1.0, kTol);
  EXPECT_NEAR(r.collectives[0].endS, 1.5, kTol);
  EXPECT_NEAR(r.endS, 1.5, kTol);
  EXPECT_NEAR(r.ranks[0].blockedS, 1.5, kTol);
}

TEST(Replay, OneStreamRunsItsOperationsOneAfterAnother) {
  SimInput in = oneNode(2);
  in.collectives = {allreduce("A", "g", 1'000'000'000, {0, 1}),
                    allreduce("B", "g", 500'000'000, {0, 1})};
  for (auto& p : in.ranks) p = {issue(0), issue(1), wait(1)};
  const SimResult r = simulate(in);
  EXPECT_NEAR(r.collectives[1].startS, 1.0, kTol);
  EXPECT_NEAR(r.collectives[1].endS, 1.5, kTol);
}

TEST(Replay, AStragglerDelaysEveryoneWhoWaitsForItsCollective) {
  SimInput in = oneNode(3);
  // X costs 0.25 s, Y 0.125 s (world 3: 2(n-1)/n = 4/3 of the bytes at 1 GB/s).
  in.collectives = {allreduce("X", "g", 187'500'000, {0, 1, 2}),
                    allreduce("Y", "g", 93'750'000, {0, 1, 2})};
  for (int r = 0; r < 3; ++r) {
    in.ranks[r] = {mark("step begin"), compute(r == 2 ? 5.0 : 1.0), issue(0), wait(0),
                   compute(1.0), issue(1), wait(1), mark("step end")};
  }
  const SimResult r = simulate(in);
  EXPECT_NEAR(r.collectives[0].startS, 5.0, kTol);  // rank 2 issues last
  EXPECT_EQ(r.collectives[0].lastIssuer, 2);
  EXPECT_NEAR(r.collectives[0].endS, 5.25, kTol);
  EXPECT_NEAR(r.collectives[1].endS, 6.375, kTol);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_NEAR(r.ranks[rank].marks.at("step end")[0], 6.375, kTol) << rank;
    EXPECT_NEAR(r.ranks[rank].computeS, rank == 2 ? 6.0 : 2.0, kTol) << rank;
  }
  EXPECT_NEAR(r.ranks[0].blockedS, 4.375, kTol);  // 4.25 behind the straggler + 0.125
}

TEST(Replay, ACollectiveOfASubgroupDoesNotWaitForOthers) {
  SimInput in = oneNode(3);
  in.collectives = {allreduce("pair", "p", 1'000'000'000, {0, 1})};  // world 2: 1 s
  in.ranks[0] = {issue(0), wait(0)};
  in.ranks[1] = {issue(0), wait(0)};
  in.ranks[2] = {compute(10.0)};
  const SimResult r = simulate(in);
  EXPECT_NEAR(r.ranks[0].endS, 1.0, kTol);
  EXPECT_NEAR(r.ranks[2].endS, 10.0, kTol);
}

// Note [Messages in the replay]: two ranks send each other 1 GB at once, each
// issuing its send before its receive. A stream per direction: neither waits
// for the other's order; they share the node's link (1 GB/s) and both end
// at 2 s. Then a third message 0->1 queues behind the first on its stream.
TEST(Replay, MessagesEachWayRunBesideEachOtherAndInOrderOneWay) {
  SimInput in = oneNode(2);
  const auto message = [](const std::string& name, const std::string& stream,
                           std::vector<int> pair) {
    return SimCollective{name, stream, comm::OpType::kSend, 1'000'000'000, std::move(pair)};
  };
  in.collectives = {message("A", "g 0->1", {0, 1}), message("B", "g 1->0", {1, 0}),
                    message("C", "g 0->1", {0, 1})};
  in.ranks[0] = {issue(0), issue(2), issue(1), wait(0), wait(1), wait(2)};
  in.ranks[1] = {issue(1), issue(0), issue(2), wait(0), wait(1), wait(2)};
  const SimResult r = simulate(in);
  EXPECT_NEAR(r.collectives[0].endS, 2.0, kTol);
  EXPECT_NEAR(r.collectives[1].endS, 2.0, kTol);
  EXPECT_NEAR(r.collectives[2].startS, 2.0, kTol);  // behind A, alone on the link
  EXPECT_NEAR(r.collectives[2].endS, 3.0, kTol);
}

TEST(Replay, AWaitForACollectiveARankNeverIssuesIsADeadlockNamingIt) {
  SimInput in = oneNode(3);
  in.collectives = {allreduce("allreduce #4 on w1_default", "g", 8, {0, 1, 2})};
  in.ranks[0] = {issue(0), wait(0)};
  in.ranks[1] = {issue(0), wait(0)};
  in.ranks[2] = {compute(1.0)};
  try {
    simulate(in);
    FAIL() << "no deadlock reported";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("allreduce #4 on w1_default"), std::string::npos) << what;
    EXPECT_NE(what.find("ranks [0, 1] issued and ranks [2] never did"), std::string::npos)
        << what;
  }
}

TEST(Replay, MalformedProgramsAreRefusedNamingTheProblem) {
  const auto expectBad = [](SimInput in, const std::string& part) {
    try {
      simulate(in);
      ADD_FAILURE() << "accepted; expected: " << part;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  SimInput in = oneNode(2);
  in.collectives = {allreduce("A", "g", 8, {0, 1})};
  in.ranks = {{compute(-1.0)}, {}};
  expectBad(in, "computes for -1 s");
  in.ranks = {{compute(std::numeric_limits<double>::quiet_NaN())}, {}};
  expectBad(in, "finite");
  in.ranks = {{wait(0)}, {}};
  expectBad(in, "waits for A before issuing it");
  in.ranks = {{issue(0), issue(0)}, {}};
  expectBad(in, "issues A twice");
  in.ranks = {{issue(3)}, {}};
  expectBad(in, "names collective 3 of 1");
  in.collectives = {allreduce("B", "g", 8, {0, 2})};
  in.ranks = {{}, {}};
  expectBad(in, "B names rank 2");
  in.collectives = {allreduce("C", "g", 8, {0})};
  in.ranks = {{}, {issue(0)}};
  expectBad(in, "rank 1 is not part of C");
}

}  // namespace
}  // namespace distlab::emulator
