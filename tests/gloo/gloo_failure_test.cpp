// Failure behaviour of the Gloo backend (Note [Gloo peer failure]):
//   - a peer killed mid-collective is DistPeerFailureError naming it, on every
//     survivor, far within the timeout; the group then refuses work and says why;
//   - a collective past its timeout is DistTimeoutError naming group, seq, op;
//   - abort() fails pending work promptly; a p2p timeout fails only that
//     operation; a dead peer fails a pending receive.
// That a collective or a receive failed from outside never writes the
// caller's tensor afterwards is the failure suite's (tests/comm/failure_suite.hpp),
// which gloo_suite_test runs on gloo.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/process_group.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "tests/comm/comm_test_util.hpp"
#include "tests/support/spawn.hpp"

namespace distlab::testing {
namespace {

using comm::ProcessGroup;

std::shared_ptr<ProcessGroup> makeGroup(RankContext& ctx, std::chrono::milliseconds timeout) {
  return makeTestGroup(ctx, "gloo", "gloofail", timeout);
}

TEST(GlooFailure, KilledPeerIsNamedOnEverySurvivorWellWithinTheTimeout) {
  SpawnOptions options;
  options.mayDie = {1};
  spawn(SpawnMode::kProcesses, 3, [](RankContext& ctx) {
    auto g = makeGroup(ctx, std::chrono::seconds(30));
    Tensor t = ones({1 << 10});
    g->allreduce(t)->wait();  // everyone connected
    if (ctx.rank == 1) {
      Tensor big = ones({1 << 20});
      g->allreduce(big);  // issued, then the process dies mid-collective
      ctx.killSelf();
    }
    Tensor big = ones({1 << 20});
    const double seconds = expectThrows<DistPeerFailureError>(
        [&] { g->allreduce(big)->wait(); },
        {"peer rank 1", "global rank 1", "died", "ALLREDUCE", "seq 2", "gloofail"});
    // Timeout 30 s; detection is the socket close plus the 300 ms record grace.
    if (seconds > 5.0) throw std::runtime_error("detection took " + std::to_string(seconds) + " s");
    expectThrows<DistBackendError>([&] { g->allreduce(t)->wait(); },
                                   {"refuses new work", "peer rank 1"});
  }, options);
}

TEST(GlooFailure, CollectivePastItsTimeoutIsDistTimeoutError) {
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = makeGroup(ctx, std::chrono::milliseconds(500));
    g->barrier()->wait();
    if (ctx.rank == 1) {
      // Never joins the allreduce; waits (bounded) until rank 0 reported.
      ctx.store->wait({"reported"}, std::chrono::seconds(20));
      return;
    }
    Tensor t = ones({8});
    const double seconds = expectThrows<DistTimeoutError>(
        [&] { g->allreduce(t)->wait(); }, {"ALLREDUCE", "seq 2", "gloofail", "timed out"});
    if (seconds < 0.4) throw std::runtime_error("timed out early: " + std::to_string(seconds));
    expectThrows<DistBackendError>([&] { g->barrier()->wait(); },
                                   {"refuses new work", "timed out"});
    ctx.store->setString("reported", "1");
  });
}

TEST(GlooFailure, AbortFailsPendingWorkAndRefusesMore) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto g = makeGroup(ctx, std::chrono::seconds(30));
    g->barrier()->wait();
    if (ctx.rank == 1) {
      ctx.store->wait({"aborted"}, std::chrono::seconds(20));
      return;
    }
    Tensor t = ones({4});
    auto work = g->allreduce(t);  // rank 1 never joins
    Stopwatch watch;
    g->abort("test abort");
    expectThrows<DistBackendError>([&] { work->wait(); }, {"abort"});
    if (watch.elapsedSeconds() > 2.0) throw std::runtime_error("abort was slow");
    expectThrows<DistBackendError>([&] { g->allreduce(t)->wait(); },
                                   {"refuses new work", "test abort"});
    ctx.store->setString("aborted", "1");
  });
}

TEST(GlooFailure, ReceiveTimeoutFailsOnlyThatOperation) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto g = makeGroup(ctx, std::chrono::seconds(10));
    if (ctx.rank == 0) {
      Tensor t = empty({2});
      comm::RecvOptions ro;
      ro.tag = 4;
      ro.timeout = std::chrono::milliseconds(100);
      expectThrows<DistTimeoutError>([&] { g->recv(t, 1, ro); },
                                     {"RECV", "peer 1", "timed out", "rank 1"});
    }
    Tensor t = ones({2});
    g->allreduce(t)->wait();
    expectEqualTensor(t, full({2}, 2.0), "allreduce after a recv timeout");
    // Point-to-point on the same tag still matches in order afterwards.
    if (ctx.rank == 1) {
      g->send(full({2}, 5.0), 0, {.tag = 4});
    } else {
      Tensor r = empty({2});
      EXPECT_EQ(g->recv(r, 1, {.tag = 4}), 1);
      expectEqualTensor(r, full({2}, 5.0), "recv after a timed-out recv");
    }
  });
}

TEST(GlooFailure, DeadPeerFailsPendingReceive) {
  SpawnOptions options;
  options.mayDie = {1};
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = makeGroup(ctx, std::chrono::seconds(30));
    g->barrier()->wait();
    if (ctx.rank == 1) ctx.killSelf();
    Tensor t = empty({4});
    const double seconds = expectThrows<DistPeerFailureError>(
        [&] { g->recv(t, 1); }, {"RECV", "peer rank 1", "died"});
    if (seconds > 5.0) throw std::runtime_error("detection took " + std::to_string(seconds) + " s");
  }, options);
}

TEST(GlooFailure, SelfSendAndAnySourceReceive) {
  spawn(SpawnMode::kThreads, 3, [](RankContext& ctx) {
    auto g = makeGroup(ctx, std::chrono::seconds(10));
    // Send to self through isend/irecv (the blocking forms reject self).
    auto s = g->isend(full({3}, ctx.rank + 1.0), ctx.rank, {.tag = 9});
    Tensor mine = empty({3});
    auto r = g->irecv(mine, ctx.rank, {.tag = 9});
    s->wait();
    r->wait();
    expectEqualTensor(mine, full({3}, ctx.rank + 1.0), "self message");
    // Rank 0 receives from any source twice; ranks 1 and 2 send once each.
    if (ctx.rank == 0) {
      int seen = 0;
      for (int i = 0; i < 2; ++i) {
        Tensor x = empty({1});
        auto w = g->irecvAnysource(x, {.tag = 3});
        w->wait();
        const int src = w->sourceRank();
        expectEqualTensor(x, full({1}, 10.0 * src), "any-source payload");
        seen |= 1 << src;
      }
      EXPECT_EQ(seen, 0b110);
    } else {
      g->send(full({1}, 10.0 * ctx.rank), 0, {.tag = 3});
    }
    g->barrier()->wait();
  });
}

}  // namespace
}  // namespace distlab::testing
