// No false alarms: a randomized but correct workload of 240 mixed operations
// (uneven all_gather, uneven all_to_all_single, barriers, subgroups,
// point-to-point rings and batches, coalesced and rooted collectives) passes
// under DETAIL on 4 ranks, and the results are still right. The operation
// sequence comes from one seeded generator shared by every rank; data depends
// on the rank.
#include <gtest/gtest.h>

#include <random>

#include "runtime/comm/debug/monitored_barrier.hpp"
#include "runtime/comm/debug/process_group_wrapper.hpp"
#include "tests/debug/debug_test_util.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::testing {
namespace {

using comm::ProcessGroupPtr;

constexpr int kWorld = 4;
constexpr int kSteps = 240;
constexpr uint32_t kSeed = 20261121;

struct Groups {
  ProcessGroupPtr world, pair, trio;
};

float fill(int rank) { return static_cast<float>(rank + 1); }

void uneven(const Groups& g, int r, int step) {
  const int n = g.world->size();
  std::vector<Tensor> outs;
  for (int q = 0; q < n; ++q) outs.push_back(zeros({(step % 3) + q + 1}));
  g.world->allgather(outs, full({(step % 3) + r + 1}, fill(r)))->wait();
  for (int q = 0; q < n; ++q) ASSERT_EQ(outs[q].toVector<float>().back(), fill(q));
}

void alltoallUneven(const Groups& g, int r) {
  const int n = g.world->size();
  std::vector<int64_t> in, out;
  int64_t rowsIn = 0, rowsOut = 0;
  for (int q = 0; q < n; ++q) {
    in.push_back((r + q) % 3 + 1);
    out.push_back((q + r) % 3 + 1);
    rowsIn += in.back();
    rowsOut += out.back();
  }
  Tensor output = zeros({rowsOut, 2});
  g.world->alltoallSingle(output, full({rowsIn, 2}, fill(r)), out, in)->wait();
  ASSERT_EQ(output.toVector<float>().back(), fill(n - 1));
}

void ring(const Groups& g, int r, int64_t n) {
  const int size = g.world->size();
  Tensor in = zeros({n});
  auto s = g.world->isend(full({n}, fill(r)), (r + 1) % size);
  auto v = g.world->irecv(in, (r + size - 1) % size);
  s->wait();
  v->wait();
  ASSERT_EQ(in.toVector<float>().front(), fill((r + size - 1) % size));
}

void batch(const Groups& g, int r) {
  Tensor in = zeros({3});
  auto works = g.world->batchIsendIrecv(
      {{comm::P2POp::kIrecv, in, r ^ 1, 7}, {comm::P2POp::kIsend, full({3}, fill(r)), r ^ 1, 7}});
  for (auto& w : works) w->wait();
  ASSERT_EQ(in.toVector<float>().front(), fill(r ^ 1));
}

void runStep(const Groups& g, int r, std::mt19937& gen) {
  const int op = static_cast<int>(gen() % 12);
  const int64_t n = 1 + gen() % 64;
  const int root = static_cast<int>(gen() % kWorld);
  const int step = static_cast<int>(gen() % 1000);
  switch (op) {
    case 0: {
      Tensor t = full({n}, fill(r));
      g.world->allreduce(t)->wait();
      ASSERT_EQ(t.toVector<float>().front(), 10.0f);
      break;
    }
    case 1: uneven(g, r, step); break;
    case 2: g.world->barrier()->wait(); break;
    case 3: {
      Tensor t = full({n}, 1.0);
      g.pair->allreduce(t)->wait();
      ASSERT_EQ(t.toVector<float>().front(), 2.0f);
      if (g.trio->isMember()) g.trio->barrier()->wait();
      break;
    }
    case 4: ring(g, r, n); break;
    case 5: batch(g, r); break;
    case 6: alltoallUneven(g, r); break;
    case 7: {
      Tensor t = full({n}, fill(r));
      g.world->broadcast(t, {.rootRank = root})->wait();
      ASSERT_EQ(t.toVector<float>().front(), fill(root));
      break;
    }
    case 8: g.world->reduceScatterTensor(zeros({n}), ones({n * kWorld}))->wait(); break;
    case 9: g.world->allgatherIntoTensor(zeros({n * kWorld}), ones({n}))->wait(); break;
    case 10: {
      std::vector<Tensor> outs;
      if (r == root) {
        for (int q = 0; q < kWorld; ++q) outs.push_back(zeros({n}));
      }
      g.world->gather(outs, ones({n}), {.rootRank = root})->wait();
      break;
    }
    default:
      g.world->allreduceCoalesced({ones({n}), ones({2, 3}, {DType::kFloat64})})->wait();
      break;
  }
}

TEST(FalseAlarms, RandomCorrectWorkloadPassesUnderDetail) {
  TempDir dumps;
  const std::string dir = dumps.path();
  SpawnOptions so;
  so.timeout = std::chrono::seconds(90);
  spawn(SpawnMode::kProcesses, kWorld, [&](RankContext& ctx) {
    Groups g;
    g.world = initDebugRank(ctx, DebugLevel::kDetail, dir, std::chrono::milliseconds(20000));
    g.pair = comm::newSubgroups(2).first;
    g.trio = comm::newGroup({.ranks = {1, 2, 3}});
    for (const auto& pg : {g.world, g.pair}) {  // DETAIL really wraps every group
      ASSERT_NE(std::dynamic_pointer_cast<comm::ProcessGroupWrapper>(
                    pg->getBackend(DeviceType::kCPU)),
                nullptr);
    }
    std::mt19937 gen(kSeed);
    for (int step = 0; step < kSteps; ++step) {
      ASSERT_NO_FATAL_FAILURE(runStep(g, ctx.rank, gen)) << "step " << step;
    }
    comm::monitoredBarrier(g.world, std::chrono::seconds(20), true);
    EXPECT_GE(g.world->sequenceNumber(), 100u);
  }, so);
}

}  // namespace
}  // namespace distlab::testing
