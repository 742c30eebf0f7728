// The shm backend's one-sided rooted operations (Note [Eager rooted operations]
// in runtime/comm/backends/shm/shm_eager.hpp), on real processes:
//   - a writer runs up to kEagerEntries operations ahead of readers that have
//     not started (broadcast and scatter roots, gather leaves), and the data
//     arrives intact once they do;
//   - mismatches are still raised: by a reader, and then by its peers' next
//     operation; two writers (a broadcast against a reduce) at the next
//     collective; a size on either side of the eager limit on both ranks;
//   - a reader names the root it waits for, a writer whose outbox is full
//     names the ranks that have not read it (and only those), a reader whose
//     root died says so.
// Correctness of every dtype and reduce op at small sizes is the collective
// suite's (comm_suite_test): its cases are small enough to be eager.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "runtime/comm/backends/shm/shm_segment.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/core/errors.hpp"
#include "tests/comm/comm_test_util.hpp"
#include "tests/support/spawn.hpp"
#include "tests/support/test_groups.hpp"

namespace distlab::testing {
namespace {

using namespace std::chrono_literals;
constexpr int kAhead = comm::shm::kEagerEntries;
// float32 elements of a tensor over the eager limit (twice kEagerDataBytes).
constexpr int64_t kOverTheLimit = 2 * comm::shm::kEagerDataBytes / 4;

std::shared_ptr<comm::ProcessGroup> eagerGroup(RankContext& ctx,
                                               std::chrono::milliseconds timeout) {
  return makeTestGroup(ctx, "shm", "eager", timeout);
}

float valueOf(int op, int rank) { return static_cast<float>(100 * op + rank); }

TEST(ShmEager, ARootRunsAheadOfLeavesThatHaveNotStarted) {
  spawn(SpawnMode::kProcesses, 3, [](RankContext& ctx) {
    auto g = eagerGroup(ctx, 20s);
    const int total = 2 * kAhead + 3;
    // The leaves start only once the root finished kAhead broadcasts: on the
    // steps the root's first broadcast would wait for them until the timeout.
    if (ctx.rank != 0) ctx.store->wait({"root ahead"}, 20s);
    for (int i = 0; i < total; ++i) {
      Tensor t = full({8}, ctx.rank == 0 ? valueOf(i, 0) : -1.0f);
      g->broadcast(t, {.rootRank = 0})->wait();
      EXPECT_EQ(t.toVector<float>(), std::vector<float>(8, valueOf(i, 0))) << "broadcast " << i;
      if (ctx.rank == 0 && i == kAhead - 1) ctx.store->setString("root ahead", "1");
    }
  });
}

TEST(ShmEager, ScatterRootsAndGatherLeavesRunAhead) {
  spawn(SpawnMode::kProcesses, 3, [](RankContext& ctx) {
    auto g = eagerGroup(ctx, 20s);
    const int n = 3;
    // Scatter from rank 1 while the others wait; then gathers to rank 2 while it waits.
    if (ctx.rank != 1) ctx.store->wait({"scatter root ahead"}, 20s);
    for (int i = 0; i < kAhead + 2; ++i) {
      std::vector<Tensor> ins;
      if (ctx.rank == 1) {
        for (int q = 0; q < n; ++q) ins.push_back(full({4}, valueOf(i, q)));
      }
      Tensor out = full({4}, -1.0f);
      g->scatter(out, ins, {.rootRank = 1})->wait();
      EXPECT_EQ(out.toVector<float>(), std::vector<float>(4, valueOf(i, ctx.rank)))
          << "scatter " << i;
      if (ctx.rank == 1 && i == kAhead - 1) ctx.store->setString("scatter root ahead", "1");
    }
    if (ctx.rank == 2) ctx.store->wait({"leaf ahead 0", "leaf ahead 1"}, 20s);
    for (int i = 0; i < kAhead + 2; ++i) {
      std::vector<Tensor> outs;
      if (ctx.rank == 2) {
        for (int q = 0; q < n; ++q) outs.push_back(full({2}, -1.0f));
      }
      g->gather(outs, full({2}, valueOf(i, ctx.rank)), {.rootRank = 2})->wait();
      for (int q = 0; q < static_cast<int>(outs.size()); ++q) {
        EXPECT_EQ(outs[q].toVector<float>(), std::vector<float>(2, valueOf(i, q)))
            << "gather " << i << " from " << q;
      }
      if (ctx.rank != 2 && i == kAhead - 1) {
        ctx.store->setString("leaf ahead " + std::to_string(ctx.rank), "1");
      }
    }
  });
}

// Both ranks write (rank 0 as a broadcast's root, rank 1 as a reduce's leaf)
// and nobody reads: the next collective's first wait finds the entries unread.
TEST(ShmEager, TwoWritersOfDifferentOperationsFailAtTheNextCollective) {
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = eagerGroup(ctx, 10s);
    Tensor t = ones({4});
    if (ctx.rank == 0) {
      g->broadcast(t, {.rootRank = 0})->wait();
    } else {
      g->reduce(t, {.rootRank = 0})->wait();
    }
    expectThrows<DistBackendError>(
        [&] { g->allreduce(t)->wait(); },
        {"mismatch", ctx.rank == 0 ? "BROADCAST" : "REDUCE",
         ctx.rank == 0 ? "was not read by ranks [1]" : "was not read by ranks [0]"});
  });
}

// The root takes the steps (128 KiB, over the limit), the leaf the eager path
// (32 B): the leaf sees the root at a step of its sequence number.
TEST(ShmEager, ALeafUnderTheLimitAndARootOverItBothFail) {
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = eagerGroup(ctx, 10s);
    Tensor t = ones({ctx.rank == 0 ? kOverTheLimit : 8});
    expectThrows<DistBackendError>([&] { g->broadcast(t, {.rootRank = 0})->wait(); },
                                   {"mismatch", "131072 bytes", "32 bytes"});
  });
}

// The other way round: the root's broadcast is complete once written; the
// leaf, on the steps, learns of the mismatch when the root moves on.
TEST(ShmEager, ARootUnderTheLimitAndALeafOverItBothFail) {
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = eagerGroup(ctx, 10s);
    Tensor t = ones({ctx.rank == 0 ? 8 : kOverTheLimit});
    if (ctx.rank == 0) {
      g->broadcast(t, {.rootRank = 0})->wait();
      expectThrows<DistBackendError>([&] { g->allreduce(t)->wait(); }, {"mismatch"});
    } else {
      expectThrows<DistBackendError>([&] { g->broadcast(t, {.rootRank = 0})->wait(); },
                                     {"mismatch", "rank 0", "BROADCAST"});
    }
  });
}

// Rank 1's size differs: it raises as it reads; the root's broadcast is
// complete, and its next operation fails naming rank 1's mismatch (refused,
// or mirrored from rank 1's published failure while waiting).
TEST(ShmEager, TheOthersNextOperationNamesAReadersMismatch) {
  spawn(SpawnMode::kProcesses, 3, [](RankContext& ctx) {
    auto g = eagerGroup(ctx, 10s);
    Tensor t = ones({ctx.rank == 1 ? 12 : 8});
    if (ctx.rank == 1) {
      expectThrows<DistBackendError>([&] { g->broadcast(t, {.rootRank = 0})->wait(); },
                                     {"mismatch", "32 bytes", "48 bytes"});
      return;
    }
    // Rank 2's broadcast itself is refused when rank 1 failed before it began.
    expectThrows<DistBackendError>(
        [&] {
          g->broadcast(t, {.rootRank = 0})->wait();
          g->allreduce(t)->wait();
        },
        {"rank 1 failed", "Detected mismatch", "48 bytes"});
  });
}

TEST(ShmEager, AReaderTimesOutNamingTheRoot) {
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = eagerGroup(ctx, 400ms);
    g->barrier()->wait();
    if (ctx.rank == 0) {  // never broadcasts
      ctx.store->wait({"reported"}, 20s);
      return;
    }
    Tensor t = ones({4});
    expectThrows<DistTimeoutError>([&] { g->broadcast(t, {.rootRank = 0})->wait(); },
                                   {"ranks [0]", "BROADCAST", "timed out", "rank 0 is at seq"});
    ctx.store->setString("reported", "1");
  });
}

TEST(ShmEager, AWriterWithAFullOutboxTimesOutNamingItsReader) {
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = eagerGroup(ctx, 400ms);
    g->barrier()->wait();
    if (ctx.rank == 1) {  // never reads
      ctx.store->wait({"reported"}, 20s);
      return;
    }
    Tensor t = ones({4});
    for (int i = 0; i < kAhead; ++i) g->broadcast(t, {.rootRank = 0})->wait();
    expectThrows<DistTimeoutError>([&] { g->broadcast(t, {.rootRank = 0})->wait(); },
                                   {"ranks [1]", "entries are full", "has not been read"});
    ctx.store->setString("reported", "1");
  });
}

// Of two leaves, the one that read every entry is not blamed (Note [Eager read
// marks]: each reader's mark says how far it read).
TEST(ShmEager, AWriterWithAFullOutboxNamesOnlyTheReaderBehind) {
  spawn(SpawnMode::kProcesses, 3, [](RankContext& ctx) {
    auto g = eagerGroup(ctx, 400ms);
    g->barrier()->wait();
    Tensor t = ones({4});
    if (ctx.rank == 1) {  // never reads
      ctx.store->wait({"reported"}, 20s);
      return;
    }
    if (ctx.rank == 2) {  // reads every entry the root can write, then waits
      for (int i = 0; i < kAhead; ++i) g->broadcast(t, {.rootRank = 0})->wait();
      ctx.store->wait({"reported"}, 20s);
      return;
    }
    for (int i = 0; i < kAhead; ++i) g->broadcast(t, {.rootRank = 0})->wait();
    // "ranks [1]", not "ranks [1, 2]".
    expectThrows<DistTimeoutError>([&] { g->broadcast(t, {.rootRank = 0})->wait(); },
                                   {"ranks [1]", "entries are full", "has not been read"});
    ctx.store->setString("reported", "1");
  });
}

TEST(ShmEager, AReaderWhoseRootDiedSaysSo) {
  SpawnOptions options;
  options.mayDie = {0};
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = eagerGroup(ctx, 20s);
    g->barrier()->wait();
    if (ctx.rank == 0) ctx.killSelf();
    Tensor t = ones({4});
    expectThrows<DistPeerFailureError>([&] { g->broadcast(t, {.rootRank = 0})->wait(); },
                                       {"rank 0", "exited", "BROADCAST"});
  }, options);
}

}  // namespace
}  // namespace distlab::testing
