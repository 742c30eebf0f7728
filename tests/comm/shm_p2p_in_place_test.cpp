// Point-to-point messages read from the sender's memory (Note [Point-to-point
// in place] in runtime/comm/backends/shm/shm_p2p.hpp), on real processes with
// shm.single_copy=on (the path is taken whenever every rank may read its
// peers, whatever the copy rates):
//   - messages over 32 KiB go in place (over 4 KiB with more ranks than cores);
//   - messages of one to several read chunks arrive intact, whether the
//     receive or the send is posted first, and in an exchange both ways;
//   - a receive posted for a later message does not wait for an earlier one
//     nobody receives yet, also when both are large (the second streams);
//   - a size mismatch fails the receive naming both sizes, completes the
//     send, and leaves the channel usable;
//   - a send failed from outside is withdrawn before its tensor is read;
//   - a sender that died before its message was read is named by the receive.
#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <string>
#include <vector>

#include "runtime/comm/backends/shm/shm_backend.hpp"
#include "runtime/comm/backends/shm/shm_wait.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/core/errors.hpp"
#include "tests/comm/comm_test_util.hpp"
#include "tests/support/spawn.hpp"
#include "tests/support/test_groups.hpp"

namespace distlab::testing {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<comm::ProcessGroup> inPlaceGroup(RankContext& ctx) {
  return makeTestGroup(ctx, "shm", "in_place", 20s, {{"shm.single_copy", "on"}});
}

// How many messages `dst` read in place from `src` (what it published).
uint64_t readInPlace(comm::ProcessGroup& g, int src, int dst) {
  return shmBackendOf(g)->segment().channel(src, dst).inPlaceDone.load();
}

#define SKIP_WITHOUT_CROSS_MEMORY_ATTACH()                                       \
  if (auto why = crossMemoryAttachUnavailable(); !why.empty()) GTEST_SKIP() << why

// float32 elements: 64 KiB, over one 1 MiB read
// chunk by an odd tail, three chunks.
const std::vector<int64_t> kCounts = {16 * 1024, 256 * 1024 + 3, 3 * 256 * 1024};

// Every element distinct per message: a misplaced chunk cannot go unnoticed.
Tensor message(int64_t count, float base) {
  Tensor t = empty({count});
  float* p = t.data<float>();
  for (int64_t i = 0; i < count; ++i) p[i] = base + static_cast<float>(i % 4093);
  return t;
}

TEST(ShmP2PInPlace, MessagesArriveIntactWhicheverSideIsPostedFirst) {
  SKIP_WITHOUT_CROSS_MEMORY_ATTACH();
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = inPlaceGroup(ctx);
    for (size_t i = 0; i < kCounts.size(); ++i) {
      const int64_t n = kCounts[i];
      const std::string recvFirst = "recv posted " + std::to_string(i);
      const std::string sendFirst = "send posted " + std::to_string(i);
      if (ctx.rank == 0) {
        ctx.store->wait({recvFirst}, 20s);  // the receive is posted before the header comes
        g->send(message(n, 1.0f), 1);
        auto sent = g->isend(message(n, 2.0f), 1);  // the header waits, unread
        ctx.store->setString(sendFirst, "1");
        sent->wait();
      } else {
        Tensor first = full({n}, -1.0f);
        auto work = g->irecv(first, 0);
        ctx.store->setString(recvFirst, "1");
        work->wait();
        expectEqualTensor(first, message(n, 1.0f), "receive posted first");
        ctx.store->wait({sendFirst}, 20s);
        Tensor second = full({n}, -1.0f);
        g->recv(second, 0);
        expectEqualTensor(second, message(n, 2.0f), "send posted first");
      }
    }
    // Both ways at once, as a pipeline stage's exchange (send to the next,
    // receive from the previous).
    for (int64_t n : kCounts) {
      Tensor out = full({n}, -1.0f);
      auto sent = g->isend(message(n, 10.0f * ctx.rank), 1 - ctx.rank);
      g->recv(out, 1 - ctx.rank);
      sent->wait();
      expectEqualTensor(out, message(n, 10.0f * (1 - ctx.rank)), "exchange");
    }
    // Every message above went in place: two per size one way, one per size
    // each way in the exchange.
    const uint64_t sizes = kCounts.size();
    EXPECT_EQ(readInPlace(*g, 1 - ctx.rank, ctx.rank), ctx.rank == 1 ? 3 * sizes : sizes);
  });
}

TEST(ShmP2PInPlace, ALaterReceiveDoesNotWaitForAnEarlierUnreceivedMessage) {
  SKIP_WITHOUT_CROSS_MEMORY_ATTACH();
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = inPlaceGroup(ctx);
    const int64_t n = kCounts[1];
    if (ctx.rank == 0) {
      // Two large messages and a small one; the receiver takes them in reverse.
      auto a = g->isend(message(n, 1.0f), 1, {.tag = 1});
      auto b = g->isend(message(n, 2.0f), 1, {.tag = 2});
      auto c = g->isend(message(8, 3.0f), 1, {.tag = 3});
      c->wait();
      b->wait();
      a->wait();
    } else {
      Tensor c = empty({8}), b = empty({n}), a = empty({n});
      g->recv(c, 0, {.tag = 3});
      g->recv(b, 0, {.tag = 2});
      g->recv(a, 0, {.tag = 1});
      expectEqualTensor(c, message(8, 3.0f), "tag 3");
      expectEqualTensor(b, message(n, 2.0f), "tag 2");
      expectEqualTensor(a, message(n, 1.0f), "tag 1");
      // Only the first went in place: the second came while it was unread.
      EXPECT_EQ(readInPlace(*g, 0, 1), 1u);
    }
  });
}

TEST(ShmP2PInPlace, ASizeMismatchFailsTheReceiveAndCompletesTheSend) {
  SKIP_WITHOUT_CROSS_MEMORY_ATTACH();
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = inPlaceGroup(ctx);
    const int64_t n = kCounts[1];
    if (ctx.rank == 0) {
      g->send(message(n, 1.0f), 1);  // completes: the receiver counts it done
      g->send(message(n, 2.0f), 1);
    } else {
      Tensor tooSmall = full({n - 1}, -1.0f);
      expectThrows<DistBackendError>(
          [&] { g->recv(tooSmall, 0); },
          {"recv from rank 0", "expects " + std::to_string(4 * (n - 1)) + " bytes",
           std::to_string(4 * n) + " bytes"});
      expectEqualTensor(tooSmall, full({n - 1}, -1.0f), "a failed receive's tensor");
      Tensor next = empty({n});
      g->recv(next, 0);
      expectEqualTensor(next, message(n, 2.0f), "the next message on the channel");
      EXPECT_EQ(readInPlace(*g, 0, 1), 2u);
    }
  });
}

// A send failed from outside while its header is out is withdrawn: its
// tensor, which its caller may overwrite or free once the Work failed, is
// never read; the receive gets zeros, as from a streamed send cut short.
TEST(ShmP2PInPlace, AFailedSendIsWithdrawnBeforeItsTensorIsRead) {
  SKIP_WITHOUT_CROSS_MEMORY_ATTACH();
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = inPlaceGroup(ctx);
    const int64_t n = kCounts[1];
    if (ctx.rank == 0) {
      Tensor t = message(n, 1.0f);
      auto large = g->isend(t, 1, {.tag = 1});
      g->send(message(8, 2.0f), 1, {.tag = 2});  // behind the large one's header: it is out
      large->abort("withdrawn by the test");
      expectThrows<DistBackendError>([&] { large->wait(); }, {"withdrawn by the test"});
      t.fill_(99.0f);  // what a read after the failure would see
      ctx.store->setString("withdrawn", "1");
      g->send(message(n, 3.0f), 1, {.tag = 3});  // the channel carries on
    } else {
      ctx.store->wait({"withdrawn"}, 20s);
      Tensor small = empty({8}), large = full({n}, -1.0f), next = empty({n});
      g->recv(small, 0, {.tag = 2});
      g->recv(large, 0, {.tag = 1});
      expectEqualTensor(small, message(8, 2.0f), "the message behind it");
      expectEqualTensor(large, zeros({n}), "the withdrawn message");
      g->recv(next, 0, {.tag = 3});
      expectEqualTensor(next, message(n, 3.0f), "the next message");
    }
  });
}

// A message of up to 32 KiB streams (its waiting caller moves it, Note
// [Waiting drives the engine]); one byte-multiple more goes in place. With
// more ranks than cores (a one-core machine) the line lies at 4 KiB instead.
TEST(ShmP2PInPlace, MessagesOver32KiBGoInPlace) {
  SKIP_WITHOUT_CROSS_MEMORY_ATTACH();
  const bool oversubscribed = comm::shm::waitPolicyFor(2).yieldNs > 0;
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto g = inPlaceGroup(ctx);
    // float32: 4 KiB, 4 KiB + 4, 32 KiB, 32 KiB + 4
    for (int64_t n : {int64_t{1024}, int64_t{1025}, int64_t{8192}, int64_t{8193}}) {
      if (ctx.rank == 0) {
        g->send(message(n, 5.0f), 1);
      } else {
        Tensor t = empty({n});
        g->recv(t, 0);
        expectEqualTensor(t, message(n, 5.0f), std::to_string(n) + " elements");
      }
    }
    if (ctx.rank == 1) {
      EXPECT_EQ(readInPlace(*g, 0, 1), oversubscribed ? 3u : 1u);
    }
  });
}

// With more ranks than cores (one more rank than this machine gives the
// test), a message over 4 KiB goes in place and one of 4 KiB streams.
TEST(ShmP2PInPlace, WithMoreRanksThanCoresMessagesOver4KiBGoInPlace) {
  SKIP_WITHOUT_CROSS_MEMORY_ATTACH();
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int world = CPU_COUNT(&set) + 1;
  if (world > comm::shm::kWideGroupRanks) GTEST_SKIP() << "a wide group reads nothing in place";
  ASSERT_GT(comm::shm::waitPolicyFor(world).yieldNs, 0) << "the group is not oversubscribed";
  spawn(SpawnMode::kProcesses, world, [](RankContext& ctx) {
    auto g = inPlaceGroup(ctx);
    for (int64_t n : {int64_t{1024}, int64_t{1025}}) {  // float32: 4 KiB, 4 KiB + 4
      if (ctx.rank == 0) {
        g->send(message(n, 3.0f), 1);
      } else if (ctx.rank == 1) {
        Tensor t = empty({n});
        g->recv(t, 0);
        expectEqualTensor(t, message(n, 3.0f), std::to_string(n) + " elements");
      }
    }
    if (ctx.rank == 1) {
      EXPECT_EQ(readInPlace(*g, 0, 1), 1u);
    }
  });
}

// The rule is whether ranks may read each other, not the collectives' copy
// rates: with the default options (shm.single_copy=auto) a large message
// goes in place wherever the system allows cross-memory attach; with the
// option off it streams.
TEST(ShmP2PInPlace, TheDefaultOptionsSendInPlaceWhereRanksMayRead) {
  SKIP_WITHOUT_CROSS_MEMORY_ATTACH();
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    for (const char* mode : {"auto", "off"}) {
      auto g = makeTestGroup(ctx, "shm", std::string("mode_") + mode, 20s,
                             {{"shm.single_copy", mode}});
      const int64_t n = kCounts[1];
      Tensor out = empty({n});
      auto sent = g->isend(message(n, 1.0f + ctx.rank), 1 - ctx.rank);
      g->recv(out, 1 - ctx.rank);
      sent->wait();
      expectEqualTensor(out, message(n, 2.0f - ctx.rank), mode);
      EXPECT_EQ(readInPlace(*g, 1 - ctx.rank, ctx.rank), std::string(mode) == "auto" ? 1u : 0u)
          << "shm.single_copy=" << mode;
    }
  });
}

TEST(ShmP2PInPlace, AReceiveNamesASenderThatDiedBeforeItsMessageWasRead) {
  SKIP_WITHOUT_CROSS_MEMORY_ATTACH();
  SpawnOptions options;
  options.mayDie = {0};
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = inPlaceGroup(ctx);
    g->barrier()->wait();
    if (ctx.rank == 0) {
      auto sent = g->isend(message(kCounts[1], 1.0f), 1);  // its header is out, its bytes here
      ctx.store->setString("sent", "1");
      ctx.killSelf();
    }
    ctx.store->wait({"sent"}, 20s);
    Tensor t = full({kCounts[1]}, -1.0f);
    expectThrows<DistPeerFailureError>([&] { g->recv(t, 0); },
                                       {"recv from rank 0", "read in place", "exited"});
  }, options);
}

}  // namespace
}  // namespace distlab::testing
