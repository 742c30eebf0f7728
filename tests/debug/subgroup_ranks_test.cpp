// Ranks named right in subgroups (Note [Naming ranks]): four ranks in
// processes on shm, a subgroup of global ranks {1, 3}, so group rank 1 is
// global rank 3. Every message of the DETAIL wrapper, the monitored barrier
// and the watchdog names "rank 1 of group '<name>' (global rank 3)", the
// culprit line parses back to global ranks, and analyzeDumps() reports
// global ranks.
#include <gmock/gmock.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "emulator/analyze/fr_analysis.hpp"
#include "runtime/comm/debug/monitored_barrier.hpp"
#include "runtime/comm/debug/rank_names.hpp"
#include "tests/debug/debug_test_util.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::testing {
namespace {

using comm::ProcessGroupPtr;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kWorld = 4;
constexpr int kLow = 1;   // global rank of group rank 0
constexpr int kHigh = 3;  // global rank of group rank 1
// Every case ends with storeBarrier(): ranks outside the fault wait there (the
// event) until the ranks in it have seen their error.

std::string name(int groupRank, const ProcessGroupPtr& sub, bool capital) {
  return fmt::format("{} {} of group '{}' (global rank {})", capital ? "Rank" : "rank", groupRank,
                     sub->name(), groupRank == 0 ? kLow : kHigh);
}

struct Case {
  DebugLevel level = DebugLevel::kDetail;
  // Runs on every rank with the world and the subgroup (a non-member handle
  // on ranks 0 and 2); returns normally or throws the fault's error.
  std::function<void(RankContext&, ProcessGroupPtr&, ProcessGroupPtr&)> fault;
  std::function<void(int globalRank, const ProcessGroupPtr& sub, const Caught&)> check;
  bool needDumps = false;  // every rank waits for its flight-recorder dump
};

emulator::AnalysisResult run(const Case& c) {
  TempDir dumps;
  const std::string dir = dumps.path();
  SpawnOptions so;
  so.timeout = std::chrono::seconds(40);
  spawn(SpawnMode::kProcesses, kWorld, [&](RankContext& ctx) {
    auto world = initDebugRank(ctx, c.level, dir);
    auto sub = comm::newGroup({.ranks = {kLow, kHigh}});
    world->allreduce(ones({4}))->wait();
    Caught caught = catchFailure([&] { c.fault(ctx, world, sub); });
    if (c.check) c.check(ctx.rank, sub, caught);
    storeBarrier(ctx, "end");
    if (c.needDumps) {
      EXPECT_TRUE(waitForDump(ctx, std::chrono::seconds(5))) << "rank " << ctx.rank << " no dump";
    }
  }, so);
  if (!c.needDumps) return {};
  auto analysis = emulator::analyzeDumps(dumpFiles(dir));
  std::printf("%s", analysis.text.c_str());
  return analysis;
}

TEST(SubgroupRanks, DetailMismatchNamesGroupAndGlobalRanks) {
  Case c;
  c.fault = [](RankContext& ctx, ProcessGroupPtr&, ProcessGroupPtr& sub) {
    if (!sub->isMember()) return;
    sub->allreduce(ones({ctx.rank == kHigh ? 20 : 10}))->wait();
  };
  c.check = [](int rank, const ProcessGroupPtr& sub, const Caught& got) {
    if (!sub->isMember()) {
      EXPECT_FALSE(got.thrown) << got.what;
      return;
    }
    expectDetectedInTime(got, "subgroup mismatch, global rank " + std::to_string(rank));
    const int mine = rank == kLow ? 0 : 1, other = 1 - mine;
    EXPECT_THAT(got.what, HasSubstr("Detected mismatch between collectives on ranks. " +
                                    name(mine, sub, true) + " is running collective: "));
    EXPECT_THAT(got.what, HasSubstr("but " + name(other, sub, true) + " is running collective"));
    EXPECT_THAT(got.what, HasSubstr("  " + name(1, sub, false) + ": seq 1 ALLREDUCE ["));
  };
  run(c);
}

TEST(SubgroupRanks, DetailTimeoutNamesTheMissingRankAndItsGlobalCulprit) {
  Case c;
  c.fault = [](RankContext& ctx, ProcessGroupPtr&, ProcessGroupPtr& sub) {
    if (ctx.rank == kLow) sub->allreduce(ones({10}))->wait();  // global 3 never joins
  };
  c.check = [](int rank, const ProcessGroupPtr& sub, const Caught& got) {
    if (rank != kLow) {
      EXPECT_FALSE(got.thrown) << got.what;
      return;
    }
    expectDetectedInTime(got, "subgroup timeout");
    EXPECT_TRUE(got.timeout) << got.what;
    EXPECT_THAT(got.what, HasSubstr("[" + name(0, sub, true) + "]: " + name(1, sub, true) +
                                    " failed to pass monitoredBarrier in 1000 ms"));
    EXPECT_THAT(got.what, HasSubstr("  " + name(1, sub, false) + ": alive (pid "));
    EXPECT_THAT(comm::parseCulpritRanks(got.what), ElementsAre(kHigh)) << got.what;
  };
  run(c);
}

TEST(SubgroupRanks, DetailUnmatchedRecvNamesThePeerByGroupAndGlobalRank) {
  Case c;
  c.fault = [](RankContext& ctx, ProcessGroupPtr&, ProcessGroupPtr& sub) {
    if (ctx.rank == kLow) sub->irecv(zeros({10}), 1)->wait();  // global 3 never sends
  };
  c.check = [](int rank, const ProcessGroupPtr& sub, const Caught& got) {
    if (rank != kLow) {
      EXPECT_FALSE(got.thrown) << got.what;
      return;
    }
    expectDetectedInTime(got, "subgroup unmatched recv");
    EXPECT_THAT(got.what, HasSubstr("[" + name(0, sub, true) + "] Watchdog caught"));
    EXPECT_THAT(got.what, HasSubstr("Unmatched point-to-point operation (DETAIL) on " +
                                    name(0, sub, false) + " in group '" + sub->name() +
                                    "': recv #1 from " + name(1, sub, false) + " (tag 0) [10] "
                                    "has no matching send: " + name(1, sub, false) +
                                    " has not posted any send(s) with tag 0 to " +
                                    name(0, sub, false) + "; " + name(1, sub, false) +
                                    " is alive"));
  };
  run(c);
}

TEST(SubgroupRanks, MonitoredBarrierNamesGroupAndGlobalRanks) {
  Case c;
  c.level = DebugLevel::kOff;
  c.fault = [](RankContext& ctx, ProcessGroupPtr&, ProcessGroupPtr& sub) {
    if (ctx.rank == kLow) comm::monitoredBarrier(sub, kTimeout);  // global 3 never arrives
  };
  c.check = [](int rank, const ProcessGroupPtr& sub, const Caught& got) {
    if (rank != kLow) {
      EXPECT_FALSE(got.thrown) << got.what;
      return;
    }
    expectDetectedInTime(got, "subgroup monitored barrier");
    EXPECT_THAT(got.what, HasSubstr("[" + name(0, sub, true) + "]: " + name(1, sub, true) +
                                    " failed to pass monitoredBarrier in 1000 ms"));
    EXPECT_THAT(got.what, HasSubstr("  " + name(1, sub, false) + ": alive (pid "));
  };
  run(c);
}

TEST(SubgroupRanks, MonitoredBarrierPeerNamesRankZeroOfTheGroup) {
  Case c;
  c.level = DebugLevel::kOff;
  c.fault = [](RankContext& ctx, ProcessGroupPtr&, ProcessGroupPtr& sub) {
    if (ctx.rank == kHigh) comm::monitoredBarrier(sub, kTimeout);  // global 1 never arrives
  };
  c.check = [](int rank, const ProcessGroupPtr& sub, const Caught& got) {
    if (rank != kHigh) {
      EXPECT_FALSE(got.thrown) << got.what;
      return;
    }
    // Rank 0 of the group never answers: the peer gives up after the timeout
    // plus kMonitoredBarrierGrace.
    EXPECT_TRUE(got.thrown);
    EXPECT_LE(got.seconds, (kTimeout + comm::kMonitoredBarrierGrace).count() / 1000.0 +
                               kDetectionSlackSeconds);
    EXPECT_THAT(got.what, HasSubstr(name(0, sub, true) + " did not answer within 6000 ms"));
    EXPECT_THAT(got.what, HasSubstr(name(1, sub, true) + " successfully reached "
                                    "monitoredBarrier, but received errors while waiting for "
                                    "send/recv from " + name(0, sub, false)));
  };
  run(c);
}

TEST(SubgroupRanks, WatchdogNamesTheRankAndAnalyzeReportsGlobalRanks) {
  Case c;
  c.level = DebugLevel::kOff;
  c.needDumps = true;
  c.fault = [](RankContext& ctx, ProcessGroupPtr&, ProcessGroupPtr& sub) {
    if (ctx.rank == kHigh) sub->allreduce(ones({10}))->wait();  // global 1 never joins
  };
  c.check = [](int rank, const ProcessGroupPtr& sub, const Caught& got) {
    if (rank != kHigh) {
      EXPECT_FALSE(got.thrown) << got.what;
      return;
    }
    expectDetectedInTime(got, "subgroup watchdog");
    EXPECT_THAT(got.what, HasSubstr("[" + name(1, sub, true) +
                                    "] Watchdog caught collective operation timeout: "));
    EXPECT_THAT(got.what, HasSubstr("[PG " + sub->name() + " (" + sub->description() + ") " +
                                    name(1, sub, true) + "] failure detected by watchdog"));
  };
  auto analysis = run(c);
  ASSERT_EQ(analysis.divergences.size(), 1u) << analysis.text;
  const auto& d = analysis.divergences.front();
  EXPECT_EQ(d.kind, "NOT_JOINED");
  EXPECT_THAT(d.culprits, ElementsAre(kLow));  // a global rank, not group rank 0
  EXPECT_THAT(d.text, HasSubstr("missing ranks: {1} / joined ranks: {3}"));
  EXPECT_THAT(d.text, HasSubstr("(Ranks are global ranks; group " + d.group +
                                " holds global ranks {1, 3} as group ranks 0 to 1.)"));
}

TEST(SubgroupRanks, AnalyzeNamesTheGlobalRankOfAMismatch) {
  Case c;
  c.level = DebugLevel::kOff;
  c.needDumps = true;
  c.fault = [](RankContext& ctx, ProcessGroupPtr&, ProcessGroupPtr& sub) {
    if (sub->isMember()) sub->allreduce(ones({ctx.rank == kHigh ? 20 : 10}))->wait();
  };
  c.check = [](int rank, const ProcessGroupPtr& sub, const Caught& got) {
    if (sub->isMember()) expectDetectedInTime(got, "subgroup mismatch, global " +
                                                       std::to_string(rank));
  };
  auto analysis = run(c);
  ASSERT_EQ(analysis.divergences.size(), 1u) << analysis.text;
  const auto& d = analysis.divergences.front();
  EXPECT_EQ(d.kind, "SIZE_OR_SYNTAX_MISMATCH");
  EXPECT_THAT(d.culprits, ElementsAre(kHigh));
  EXPECT_THAT(d.text, HasSubstr("Culprit rank 3;"));
}

}  // namespace
}  // namespace distlab::testing
