// DETAIL off: the same faults end in a watchdog timeout or a backend error;
// every rank leaves a flight-recorder dump (on timeout, on error, or when a
// peer asks through the store) and analyzeDumps() names the right culprit.
// Three ranks in processes on shm, rank 2 faulty at collective 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "emulator/analyze/fr_analysis.hpp"
#include "tests/debug/debug_test_util.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::testing {
namespace {

using comm::ProcessGroupPtr;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kWorld = 3;
constexpr int kFaulty = 2;

struct Outcome {
  emulator::AnalysisResult analysis;
  std::vector<std::string> files;
};

// Runs the fault with DETAIL off. Events, not sleeps: every rank marks
// "caught" after its check, waits for its own dump (written on its error, or
// when a peer's watchdog asks through the store) and then meets the others at
// a store barrier, so a healthy rank stays alive exactly as long as a peer may
// still ask it to dump. A `fault` that must stay out of a collective waits for
// the others' "caught" mark (waitForOthersCaught).
Outcome runFault(const std::function<void(RankContext&, ProcessGroupPtr&)>& fault,
                 const std::function<void(int, const Caught&)>& check = {},
                 std::set<int> mayDie = {}) {
  TempDir dumps;
  const std::string dir = dumps.path();
  SpawnOptions so;
  so.timeout = std::chrono::seconds(30);
  so.mayDie = mayDie;
  spawn(SpawnMode::kProcesses, kWorld, [&](RankContext& ctx) {
    auto pg = initDebugRank(ctx, DebugLevel::kOff, dir);
    pg->allreduce(ones({4}))->wait();
    Caught c = catchFailure([&] { fault(ctx, pg); });
    if (check) check(ctx.rank, c);
    markEvent(ctx, "caught");
    EXPECT_TRUE(waitForDump(ctx, std::chrono::seconds(5))) << "rank " << ctx.rank << " no dump";
    storeBarrier(ctx, "end", mayDie);
  }, so);
  Outcome out;
  out.files = dumpFiles(dir);
  out.analysis = emulator::analyzeDumps(out.files);
  std::printf("%s", out.analysis.text.c_str());
  return out;
}

// A rank that stays out of the faulty collective: it returns once every other
// rank has seen its error.
void waitForOthersCaught(RankContext& ctx) {
  std::vector<int> others;
  for (int r = 0; r < ctx.worldSize; ++r) {
    if (r != ctx.rank) others.push_back(r);
  }
  waitForEvent(ctx, "caught", others);
}

const emulator::Divergence& only(const Outcome& o) {
  EXPECT_EQ(o.analysis.divergences.size(), 1u) << o.analysis.text;
  static const emulator::Divergence kNone;
  return o.analysis.divergences.empty() ? kNone : o.analysis.divergences.front();
}

TEST(WatchdogTimeout, StuckRankTimesOutWithTheReferenceMessageAndIsNamedByAnalyze) {
  auto out = runFault(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        if (ctx.rank == kFaulty) return waitForOthersCaught(ctx);  // never joins collective 2
        pg->allreduce(ones({10}))->wait();
      },
      [](int rank, const Caught& c) {
        if (rank == kFaulty) return;
        expectDetectedInTime(c, "watchdog timeout rank " + std::to_string(rank));
        // Either this rank's watchdog fires, or the first rank's watchdog aborts
        // its group and shm mirrors that report here: the text is the same.
        EXPECT_THAT(c.what, HasSubstr("] Watchdog caught collective operation timeout: "
                                      "Work(SeqNum=2, OpType=ALLREDUCE, NumelIn=10, NumelOut=10, "
                                      "Timeout(ms)=1000) ran for "));
        EXPECT_THAT(c.what, HasSubstr(" milliseconds before timing out."));
        EXPECT_THAT(c.what, HasSubstr("failure detected by watchdog at work sequence id: 2 PG "
                                      "status: last enqueued work: 2, last started work: 2, last "
                                      "completed work: 1"));
      });
  EXPECT_EQ(out.files.size(), 3u);
  const auto& d = only(out);
  EXPECT_EQ(d.kind, "NOT_JOINED");
  EXPECT_EQ(d.seq, 2u);
  EXPECT_THAT(d.culprits, ElementsAre(kFaulty));
  EXPECT_THAT(d.text, HasSubstr("Not all ranks joining collective 2"));
  EXPECT_THAT(d.text, HasSubstr("missing ranks: {2}"));
}

TEST(WatchdogTimeout, DeadRankLeavesNoDumpAndIsNamed) {
  auto out = runFault(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        if (ctx.rank == kFaulty) ctx.killSelf();
        pg->allreduce(ones({10}))->wait();
      },
      [](int rank, const Caught& c) {
        expectDetectedInTime(c, "dead rank (DETAIL off) rank " + std::to_string(rank));
      },
      {kFaulty});
  EXPECT_EQ(out.files.size(), 2u);
  const auto& d = only(out);
  EXPECT_EQ(d.kind, "NOT_JOINED");
  EXPECT_THAT(d.culprits, ElementsAre(kFaulty));
  EXPECT_THAT(d.noDump, ElementsAre(kFaulty));
  EXPECT_THAT(d.text, HasSubstr("left no dump: the process most likely died"));
}

void expectMismatch(const Outcome& out, const std::string& kind, const std::string& phrase) {
  const auto& d = only(out);
  EXPECT_EQ(d.kind, kind);
  EXPECT_EQ(d.seq, 2u);
  EXPECT_THAT(d.culprits, ElementsAre(kFaulty));
  EXPECT_THAT(d.text, HasSubstr("Culprit rank 2; Error type: " + kind));
  EXPECT_THAT(d.text, HasSubstr(phrase));
}

auto expectError(const std::string& what) {
  return [what](int rank, const Caught& c) {
    expectDetectedInTime(c, what + " (DETAIL off) rank " + std::to_string(rank));
  };
}

// The faulty rank broadcasts once the others have issued (and so recorded)
// their all-reduce: its one-sided broadcast can fail the group before a slow
// rank issues, which then refuses that rank's all-reduce unrecorded, and the
// analyzer rightly names a rank that never joined (1 run in 80 under load).
TEST(WatchdogTimeout, OpMismatchCulprit) {
  auto out = runFault(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        if (ctx.rank == kFaulty) {
          waitForEvent(ctx, "issued", {0, 1});
          pg->broadcast(ones({10}))->wait();
          return;
        }
        auto issued = pg->allreduce(ones({10}), {.asyncOp = true});
        markEvent(ctx, "issued");
        issued->wait();
      },
      expectError("op mismatch"));
  expectMismatch(out, "COLLECTIVE_TYPE_MISMATCH",
                 "Expected collective type: 'ALLREDUCE' does not match found collective type: "
                 "'BROADCAST'");
}

TEST(WatchdogTimeout, ShapeMismatchCulprit) {
  auto out = runFault(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        pg->allreduce(ones({ctx.rank == kFaulty ? 20 : 10}))->wait();
      },
      expectError("shape mismatch"));
  expectMismatch(out, "SIZE_OR_SYNTAX_MISMATCH",
                 "Expected input sizes: '[[10]]' does not match found input sizes: '[[20]]'");
}

TEST(WatchdogTimeout, DtypeMismatchCulprit) {
  auto out = runFault(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        pg->allreduce(ones({10}, {ctx.rank == kFaulty ? DType::kFloat64 : DType::kFloat32}))
            ->wait();
      },
      expectError("dtype mismatch"));
  expectMismatch(out, "DTYPE_MISMATCH", "Expected dtypes: 'float32' does not match found");
}

TEST(WatchdogTimeout, TensorCountCulprit) {
  auto out = runFault(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        std::vector<Tensor> ts{ones({4}), ones({4})};
        if (ctx.rank == kFaulty) ts.push_back(ones({4}));
        pg->allreduceCoalesced(ts)->wait();
      },
      [](int rank, const Caught& c) {
        // shm runs the coalesced tensors one by one: ranks 0 and 1 finish their
        // two, rank 2 waits for a third that never comes and times out.
        if (rank == kFaulty) expectDetectedInTime(c, "tensor count (DETAIL off) rank 2");
      });
  expectMismatch(out, "SIZE_OR_SYNTAX_MISMATCH",
                 "Expected input sizes: '[[4], [4]]' does not match found input sizes: "
                 "'[[4], [4], [4]]'");
}

TEST(WatchdogTimeout, ExtraCollectiveOfTheSameKindIsAttributedToTheRankThatIssuedIt) {
  auto out = runFault(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        if (ctx.rank == kFaulty) pg->allreduce(ones({10}))->wait();  // the extra one
        pg->allreduce(ones({10}))->wait();
      },
      [](int rank, const Caught& c) {
        if (rank != kFaulty) return;
        expectDetectedInTime(c, "extra collective (DETAIL off) rank 2");
        EXPECT_THAT(c.what, HasSubstr("Work(SeqNum=3, OpType=ALLREDUCE"));
      });
  const auto& d = only(out);
  EXPECT_EQ(d.kind, "EXTRA_COLLECTIVE");
  EXPECT_EQ(d.seq, 3u);
  EXPECT_THAT(d.culprits, ElementsAre(kFaulty));
  EXPECT_THAT(d.notJoined, ElementsAre(0, 1));
}

TEST(WatchdogTimeout, MismatchedPointToPointNamesBothSides) {
  auto out = runFault(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        if (ctx.rank == 1) pg->irecv(zeros({20}), 0)->wait();  // fails: size mismatch
        if (ctx.rank == 0) pg->isend(ones({10}), 1)->wait();   // may succeed (eager)
      });
  const auto& d = only(out);
  EXPECT_EQ(d.kind, "P2P_MISMATCH");
  EXPECT_THAT(d.culprits, ElementsAre(0, 1));
  EXPECT_THAT(d.text, HasSubstr("rank 0 send #1 to rank 1 has 10 elements of float32, but rank 1 "
                                "recv #1 from rank 0 expects 20 elements of float32"));
}

TEST(FlightRecorder, DumpOnRequestHasTheReferenceFields) {
  TempDir dumps;
  const std::string dir = dumps.path();
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    // Nothing here is meant to time out: a long timeout keeps a loaded machine honest.
    auto pg = initDebugRank(ctx, DebugLevel::kOff, dir, std::chrono::seconds(20));
    pg->allreduce(ones({3, 4}))->wait();
    Tensor t = ones({5});
    if (ctx.rank == 0) pg->send(t, 1);
    if (ctx.rank == 1) pg->recv(t, 0);
    // Work::finish wakes waiters before it notifies observers: give the
    // recorder's observer its moment (bounded) before dumping.
    const Deadline deadline = Deadline::after(std::chrono::seconds(2));
    auto allCompleted = [&] {
      const auto dump = nlohmann::json::parse(comm::flightRecorderJson(ctx.rank));
      for (const auto& e : dump["entries"]) {
        if (e["state"] != "completed") return false;
      }
      return dump["entries"].size() == 2;
    };
    while (!allCompleted() && !deadline.expired()) std::this_thread::yield();
    auto files = comm::dumpFlightRecorders("request", "test", ctx.rank);
    ASSERT_EQ(files.size(), 1u);
    auto j = nlohmann::json::parse(comm::flightRecorderJson(ctx.rank));
    EXPECT_EQ(j["rank"], ctx.rank);
    EXPECT_EQ(j["pg_config"]["w1_default"]["ranks"], nlohmann::json::array({0, 1}));
    EXPECT_EQ(j["pg_status"]["w1_default"]["last_completed_collective"], 1);
    ASSERT_EQ(j["entries"].size(), 2u);
    const auto& e = j["entries"][0];
    for (const char* key :
         {"record_id", "pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "op_id",
          "profiling_name", "time_created_ns", "input_sizes", "input_dtypes", "output_sizes",
          "output_dtypes", "state", "time_discovered_started_ns", "time_discovered_completed_ns",
          "duration_ms", "retired", "timeout_ms", "is_p2p"}) {
      EXPECT_TRUE(e.contains(key)) << key;
    }
    EXPECT_EQ(e["profiling_name"], "shm:all_reduce");
    EXPECT_EQ(e["input_sizes"], nlohmann::json::parse("[[3, 4]]"));
    EXPECT_EQ(e["state"], "completed");
    EXPECT_EQ(e["timeout_ms"], 20000);
    const auto& p = j["entries"][1];
    EXPECT_EQ(p["is_p2p"], true);
    EXPECT_EQ(p["p2p_seq_id"], 1);
    EXPECT_EQ(p["op_type"], ctx.rank == 0 ? "SEND" : "RECV");
  });
}

TEST(FlightRecorder, DumpsOnSignal) {
  TempDir dumps;
  const std::string dir = dumps.path();
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto pg = initDebugRank(ctx, DebugLevel::kOff, dir);
    pg->allreduce(ones({4}))->wait();  // starts the watchdog thread and its handler
    if (ctx.rank == 0) {
      std::raise(SIGUSR2);
      ASSERT_TRUE(waitForDump(ctx, std::chrono::seconds(3)));
      std::ifstream in(comm::flightRecorderDumpPath(0));
      EXPECT_EQ(nlohmann::json::parse(in)["trigger"], "signal");
    }
    pg->barrier()->wait();
  });
}

// Error-handling modes (Note [Watchdog]). Three ranks: rank 0 runs in `mode`
// with the 1 s timeout and issues an allreduce that rank 2 never joins; rank 1
// joins it when `rank1Joins` (mode 2, with a per-call timeout of
// `rank1Timeout`, so an earlier error there comes from rank 0). Ranks outside the allreduce wait for the
// "caught" marks of `waitFor` (events, not sleeps).
struct ModeRun {
  std::vector<RankOutcome> outcomes;
  std::vector<std::string> dumps;
};

ModeRun runMode(comm::ErrorHandlingMode mode, bool rank1Joins, std::vector<int> waitFor,
                const std::function<void(RankContext&, const Caught&)>& check,
                std::chrono::milliseconds rank1Timeout = std::chrono::seconds(15)) {
  TempDir dumps;
  const std::string dir = dumps.path();
  SpawnOptions so;
  so.timeout = std::chrono::seconds(30);
  ModeRun run;
  run.outcomes = spawnCollect(SpawnMode::kProcesses, kWorld, [&](RankContext& ctx) {
    auto pg = initDebugRank(ctx, DebugLevel::kOff, dir);
    if (ctx.rank == 0) comm::setErrorHandlingMode(mode);
    if (ctx.rank == kFaulty || (ctx.rank == 1 && !rank1Joins)) {
      waitForEvent(ctx, "caught", waitFor);
      return;
    }
    comm::AllreduceOptions o;
    if (ctx.rank == 1) o.timeout = rank1Timeout;
    Caught c = catchFailure([&] { pg->allreduce(ones({4}), o)->wait(); });
    check(ctx, c);
    markEvent(ctx, "caught");
  }, so);
  run.dumps = dumpFiles(dir);
  return run;
}

std::string exitedWith(int code) { return "exited with code " + std::to_string(code); }

TEST(WatchdogModes, TearDownAbortsTheGroupThenEndsTheProcess) {
  auto run = runMode(comm::ErrorHandlingMode::kTearDown, true, {1},
                     [](RankContext& ctx, const Caught& c) {
    EXPECT_TRUE(c.thrown) << "rank " << ctx.rank;
    if (ctx.rank == 0) {
      // The watchdog failed the Work with its report before tearing down; the
      // process must end while this rank waits for an event nobody sends.
      EXPECT_THAT(c.what, HasSubstr("Watchdog caught collective operation timeout"));
      waitForEvent(ctx, "never", {0}, std::chrono::seconds(10));
      ADD_FAILURE() << "mode 1 did not end the process";
      return;
    }
    // Rank 1 gets rank 0's report through the aborted group, long before its
    // own 15 s timeout: mode 1 aborts before it exits, and the report is a
    // timeout (Note [A peer's timeout is a timeout]).
    expectDetectedInTime(c, "mode 1 peer");
    EXPECT_FALSE(c.peerFailure) << c.what;
    EXPECT_TRUE(c.timeout) << c.what;
    EXPECT_THAT(c.what, HasSubstr("timed out: [Rank 0] Watchdog caught collective operation "
                                  "timeout: Work(SeqNum=1, OpType=ALLREDUCE"));
  });
  EXPECT_FALSE(run.outcomes[0].ok);
  EXPECT_THAT(run.outcomes[0].error, HasSubstr(exitedWith(comm::kWatchdogExitCode)));
  EXPECT_TRUE(run.outcomes[1].ok) << run.outcomes[1].error;
  EXPECT_TRUE(run.outcomes[2].ok) << run.outcomes[2].error;
  EXPECT_GE(run.dumps.size(), 1u);  // rank 0 dumped before tearing down
}

TEST(WatchdogModes, SkipCleanUpEndsTheProcessWithoutAborting) {
  constexpr auto kRank1Timeout = 3 * kTimeout;
  auto run = runMode(
      comm::ErrorHandlingMode::kSkipCleanUp, true, {1},
      [&](RankContext& ctx, const Caught& c) {
        ASSERT_EQ(ctx.rank, 1) << "rank 0 returned in mode 3: " << c.what;
        // No abort reached rank 1 (it still waits for rank 2, which is alive):
        // its own watchdog reports at its own timeout.
        EXPECT_TRUE(c.timeout) << c.what;
        EXPECT_GE(c.seconds, kRank1Timeout.count() / 1000.0 - 0.05);
        EXPECT_THAT(c.what, HasSubstr("[Rank 1] Watchdog caught collective operation timeout"));
        EXPECT_THAT(c.what, ::testing::Not(HasSubstr("[Rank 0]")));
      },
      kRank1Timeout);
  EXPECT_FALSE(run.outcomes[0].ok);
  EXPECT_THAT(run.outcomes[0].error, HasSubstr(exitedWith(comm::kWatchdogExitCode)));
  EXPECT_TRUE(run.outcomes[1].ok) << run.outcomes[1].error;
  EXPECT_TRUE(run.outcomes[2].ok) << run.outcomes[2].error;
}

TEST(WatchdogModes, NoHandlingReportsAndDumpsThenTheBackendFailsTheWorkLater) {
  auto run = runMode(comm::ErrorHandlingMode::kNoHandling, false, {0},
                     [](RankContext&, const Caught& c) {
    // The watchdog only reported and dumped; the backend's own timeout
    // (timeout + grace) failed the Work, and the process lives on.
    EXPECT_TRUE(c.timeout) << c.what;
    EXPECT_THAT(c.what, ::testing::Not(HasSubstr("Watchdog caught")));
    const double grace = comm::watchdogGrace(kTimeout).count() / 1000.0;
    EXPECT_GE(c.seconds, kTimeout.count() / 1000.0 + grace - 0.05);
    std::ifstream in(comm::flightRecorderDumpPath(0));
    ASSERT_TRUE(in) << "rank 0 wrote no dump";
    const auto dump = nlohmann::json::parse(in);
    EXPECT_EQ(dump["trigger"], "timeout");
    EXPECT_THAT(dump["reason"].get<std::string>(),
                HasSubstr("[Rank 0] Watchdog caught collective operation timeout: "
                          "Work(SeqNum=1, OpType=ALLREDUCE"));
  });
  for (const auto& o : run.outcomes) EXPECT_TRUE(o.ok) << "rank " << o.rank << ": " << o.error;
}

TEST(FlightRecorder, RingBufferKeepsTheLastEntries) {
  comm::FlightRecorder fr("g", "desc", {0, 1}, 0, "shm", 3);
  for (uint64_t s = 1; s <= 5; ++s) {
    comm::WorkInfo info;
    info.opType = comm::OpType::kAllreduce;
    info.seq = s;
    fr.record(info, std::chrono::milliseconds(10), {}, {});
  }
  auto entries = fr.entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries.front().seq, 3u);
  EXPECT_EQ(entries.back().seq, 5u);
  EXPECT_EQ(fr.status().lastEnqueued, 5u);
}

}  // namespace
}  // namespace distlab::testing
