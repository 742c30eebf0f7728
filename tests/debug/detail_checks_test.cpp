// TORCH_DISTRIBUTED_DEBUG=DETAIL: every fault is caught before the backend
// runs the operation, on every rank, with PyTorch's wording, within the
// operation's timeout + 2 s. Three ranks in processes on shm; rank 2 is the
// faulty one (so a strict majority names the culprit) and faults hit
// collective 2 after a correct warm-up collective 1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "runtime/comm/debug/process_group_wrapper.hpp"
#include "tests/debug/debug_test_util.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::testing {
namespace {

using comm::ProcessGroupPtr;
using ::testing::HasSubstr;

constexpr int kWorld = 3;
constexpr int kFaulty = 2;

SpawnOptions spawnOptions(std::set<int> mayDie = {}) {
  SpawnOptions o;
  o.timeout = std::chrono::seconds(30);
  o.mayDie = std::move(mayDie);
  return o;
}

// Runs `fault` on every rank after the warm-up allreduce; each rank passes
// its Caught to `check`, then marks the event "caught".
void runCase(const std::function<void(RankContext&, ProcessGroupPtr&)>& fault,
             const std::function<void(int rank, const Caught&)>& check,
             std::set<int> mayDie = {}) {
  TempDir dumps;
  const std::string dir = dumps.path();
  spawn(SpawnMode::kProcesses, kWorld, [&](RankContext& ctx) {
    auto pg = initDebugRank(ctx, DebugLevel::kDetail, dir);
    pg->allreduce(ones({4}))->wait();  // collective 1: correct
    Caught c = catchFailure([&] { fault(ctx, pg); });
    check(ctx.rank, c);
    markEvent(ctx, "caught");  // ranks that stay out of the fault wait for this
  }, spawnOptions(std::move(mayDie)));
}

TEST(DetailChecks, OpMismatchNamesBothCallsAndTheCulprit) {
  runCase(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        Tensor t = ones({10});
        (ctx.rank == kFaulty ? pg->broadcast(t) : pg->allreduce(t))->wait();
      },
      [](int rank, const Caught& c) {
        expectDetectedInTime(c, "op mismatch rank " + std::to_string(rank));
        EXPECT_THAT(c.what, HasSubstr("Detected mismatch between collectives on ranks. Rank " +
                                      std::to_string(rank) + " is running collective: "));
        if (rank == kFaulty) {
          EXPECT_THAT(c.what, HasSubstr("CollectiveFingerPrint(SequenceNumber=2, "
                                        "OpType=BROADCAST, TensorShape=[10], TensorDtypes=float32, "
                                        "TensorDeviceTypes=cpu, Root=0), but Rank 0 is running "
                                        "collective: CollectiveFingerPrint(SequenceNumber=2, "
                                        "OpType=ALLREDUCE"));
          EXPECT_THAT(c.what, HasSubstr("Collectives differ in the following aspects:   Op type: "
                                        "BROADCASTvs ALLREDUCE"));
        } else {
          EXPECT_THAT(c.what, HasSubstr("but Rank 2 is running collective: CollectiveFingerPrint("
                                        "SequenceNumber=2, OpType=BROADCAST"));
          EXPECT_THAT(c.what, HasSubstr("  Op type: ALLREDUCEvs BROADCAST"));
        }
        EXPECT_THAT(c.what, HasSubstr("Culprit rank(s): 2"));
        EXPECT_THAT(c.what, HasSubstr("rank 2: seq 1 ALLREDUCE [4] float32 SUM; seq 2 BROADCAST "
                                      "[10] float32 root 0 <- failed here"));
      });
}

TEST(DetailChecks, ShapeMismatch) {
  runCase(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        pg->allreduce(ones({ctx.rank == kFaulty ? 20 : 10}))->wait();
      },
      [](int rank, const Caught& c) {
        expectDetectedInTime(c, "shape mismatch rank " + std::to_string(rank));
        EXPECT_THAT(c.what, HasSubstr(rank == kFaulty ? "  Tensor Tensor shapes: [20]vs [10]"
                                                      : "  Tensor Tensor shapes: [10]vs [20]"));
        EXPECT_THAT(c.what, HasSubstr("Culprit rank(s): 2"));
      });
}

TEST(DetailChecks, DtypeMismatch) {
  runCase(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        pg->allreduce(ones({10}, {ctx.rank == kFaulty ? DType::kFloat64 : DType::kFloat32}))
            ->wait();
      },
      [](int rank, const Caught& c) {
        expectDetectedInTime(c, "dtype mismatch rank " + std::to_string(rank));
        EXPECT_THAT(c.what, HasSubstr(rank == kFaulty ? "  Tensor Tensor dtypes: float64vs float32"
                                                      : "  Tensor Tensor dtypes: float32vs float64"));
        EXPECT_THAT(c.what, HasSubstr("Culprit rank(s): 2"));
      });
}

TEST(DetailChecks, DifferentTensorCountsInACoalescedCall) {
  runCase(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        std::vector<Tensor> ts{ones({4}), ones({4})};
        if (ctx.rank == kFaulty) ts.push_back(ones({4}));
        pg->allreduceCoalesced(ts)->wait();
      },
      [](int rank, const Caught& c) {
        expectDetectedInTime(c, "tensor count rank " + std::to_string(rank));
        EXPECT_THAT(c.what, HasSubstr(rank == kFaulty ? "  Number of tensors: 3vs 2"
                                                      : "  Number of tensors: 2vs 3"));
        EXPECT_THAT(c.what, HasSubstr("OpType=ALLREDUCE_COALESCED, TensorShapes=[[4], [4]]"));
        EXPECT_THAT(c.what, HasSubstr("Culprit rank(s): 2"));
      });
}

TEST(DetailChecks, RankThatNeverArrivesIsReportedAliveWithItsLastCollective) {
  runCase(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        if (ctx.rank == kFaulty) {  // stuck in "user code" until the others have failed
          waitForEvent(ctx, "caught", {0, 1});
          throw Error("rank 2 skipped the collective");
        }
        pg->allreduce(ones({10}))->wait();
      },
      [](int rank, const Caught& c) {
        if (rank == kFaulty) return;
        expectDetectedInTime(c, "never arrives rank " + std::to_string(rank));
        EXPECT_GE(c.seconds, kTimeout.count() / 1000.0 - 0.05);
        EXPECT_TRUE(c.timeout) << c.what;
        EXPECT_THAT(c.what, HasSubstr("ProcessGroupWrapper: Monitored Barrier encountered error "
                                      "running collective: CollectiveFingerPrint(SequenceNumber=2, "
                                      "OpType=ALLREDUCE"));
        EXPECT_THAT(c.what, HasSubstr("[Rank " + std::to_string(rank) +
                                      "]: Rank 2 failed to pass monitoredBarrier in 1000 ms"));
        EXPECT_THAT(c.what, HasSubstr("rank 2: alive (pid "));
        EXPECT_THAT(c.what,
                    HasSubstr("its last collective in this group: seq 1 ALLREDUCE [4] float32"));
      });
}

TEST(DetailChecks, DeadRankIsReportedDeadWithoutWaitingForTheTimeout) {
  runCase(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        if (ctx.rank == kFaulty) ctx.killSelf();
        pg->allreduce(ones({10}))->wait();
      },
      [](int rank, const Caught& c) {
        expectDetectedInTime(c, "dead rank rank " + std::to_string(rank));
        EXPECT_TRUE(c.peerFailure) << c.what;
        EXPECT_LT(c.seconds, kTimeout.count() / 1000.0);  // fail fast on a dead peer
        EXPECT_THAT(c.what, HasSubstr("Rank 2 failed to pass monitoredBarrier"));
        EXPECT_THAT(c.what, HasSubstr("rank 2: dead (pid "));
        EXPECT_THAT(c.what, HasSubstr("has exited"));
      },
      {kFaulty});
}

TEST(DetailChecks, ExtraCollectiveOnOneRank) {
  runCase(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        if (ctx.rank == kFaulty) pg->barrier()->wait();  // the extra one
        pg->allreduce(ones({10}))->wait();
      },
      [](int rank, const Caught& c) {
        expectDetectedInTime(c, "extra collective rank " + std::to_string(rank));
        EXPECT_THAT(c.what, HasSubstr("CollectiveFingerPrint(SequenceNumber=2, OpType=BARRIER)"));
        EXPECT_THAT(c.what, HasSubstr(rank == kFaulty ? "  Op type: BARRIERvs ALLREDUCE"
                                                      : "  Op type: ALLREDUCEvs BARRIER"));
        EXPECT_THAT(c.what, HasSubstr("Culprit rank(s): 2"));
      });
}

// Note [DETAIL through the backend]: on shm the fingerprints travel through
// the helper group, so a correct collective leaves no key in the store
// (DISTLAB_DETAIL_EXCHANGE=store, the ctest variant of this suite: one per rank).
TEST(DetailChecks, FingerprintsTravelThroughTheChosenExchange) {
  const char* env = std::getenv("DISTLAB_DETAIL_EXCHANGE");
  const bool throughStore = env != nullptr && std::string(env) == "store";
  TempDir dumps;
  const std::string dir = dumps.path();
  spawn(SpawnMode::kProcesses, kWorld, [&](RankContext& ctx) {
    auto pg = initDebugRank(ctx, DebugLevel::kDetail, dir);
    pg->allreduce(ones({4}))->wait();
    pg->allreduce(ones({4}))->wait();  // round 2 completes only after every rank wrote round 1
    for (int r = 0; r < kWorld; ++r) {
      const std::string key = "dbg/" + pg->name() + "/c/1/" + std::to_string(r);
      EXPECT_EQ(ctx.store->check({key}), throughStore) << key;
    }
  }, spawnOptions());
}

TEST(DetailChecks, MismatchedPointToPointFailsBothSides) {
  runCase(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        if (ctx.rank == 0) pg->isend(ones({10}), 1)->wait();
        if (ctx.rank == 1) pg->irecv(zeros({20}), 0)->wait();
        if (ctx.rank == 2) throw Error("not involved");
      },
      [](int rank, const Caught& c) {
        if (rank == 2) return;
        expectDetectedInTime(c, "p2p mismatch rank " + std::to_string(rank));
        EXPECT_THAT(c.what, HasSubstr("Detected mismatch between point-to-point operations"));
        EXPECT_THAT(c.what, HasSubstr(rank == 0 ? "Rank 0 is running send #1 to rank 1 (tag 0)"
                                                : "Rank 1 is running recv #1 from rank 0 (tag 0)"));
        EXPECT_THAT(c.what, HasSubstr(rank == 0 ? "  Number of elements: 10vs 20"
                                                : "  Number of elements: 20vs 10"));
      });
}

TEST(DetailChecks, UnmatchedRecvIsExplainedInTheWatchdogReport) {
  runCase(
      [](RankContext& ctx, ProcessGroupPtr& pg) {
        if (ctx.rank == 1) pg->irecv(zeros({10}), 0)->wait();
        if (ctx.rank != 1) {  // rank 0 never sends; stays alive until rank 1 has failed
          waitForEvent(ctx, "caught", {1});
          throw Error("not involved");
        }
      },
      [](int rank, const Caught& c) {
        if (rank != 1) return;
        expectDetectedInTime(c, "unmatched recv rank 1");
        EXPECT_TRUE(c.timeout) << c.what;
        EXPECT_THAT(c.what, HasSubstr("[Rank 1] Watchdog caught collective operation timeout: "
                                      "Work(SeqNum=1, OpType=RECV, NumelIn=0, NumelOut=10, "
                                      "Timeout(ms)=1000) ran for "));
        EXPECT_THAT(c.what, HasSubstr("Unmatched point-to-point operation (DETAIL) on rank 1"));
        EXPECT_THAT(c.what, HasSubstr("recv #1 from rank 0 (tag 0) [10] has no matching send: "
                                      "rank 0 has not posted any send(s) with tag 0 to rank 1; "
                                      "rank 0 is alive"));
      });
}

TEST(DetailChecks, GroupStaysUsableAfterAMismatch) {
  TempDir dumps;
  const std::string dir = dumps.path();
  spawn(SpawnMode::kProcesses, kWorld, [&](RankContext& ctx) {
    auto pg = initDebugRank(ctx, DebugLevel::kDetail, dir);
    EXPECT_THROW(pg->allreduce(ones({ctx.rank == kFaulty ? 3 : 2}))->wait(), DistBackendError);
    Tensor t = full({1}, static_cast<double>(ctx.rank + 1));
    pg->allreduce(t)->wait();
    EXPECT_EQ(t.item<float>(), 6.0f);  // 1 + 2 + 3
  }, spawnOptions());
}

}  // namespace
}  // namespace distlab::testing
