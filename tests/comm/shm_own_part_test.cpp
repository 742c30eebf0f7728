// What a rank sends to itself skips the slots (Note [Own part from the input]
// in runtime/comm/backends/shm/shm_algorithms.hpp), on real processes, with
// slots of 4 KiB so that every operation takes several steps and nothing is
// eager:
//   - the in-place forms, where the rank's own part of the output is its
//     input (all_gather_into_tensor into the output's own chunk,
//     reduce_scatter_tensor out of the input's own chunk, a gather whose
//     root gathers into its input, a scatter whose root scatters from its
//     output), leave every part right;
//   - a PREMUL_SUM reduce scales the root's contribution once and never
//     leaves the leaves' tensors scaled.
// The collective suite (comm_suite_test) covers the out-of-place forms at
// every size with the same slots.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "runtime/comm/process_group.hpp"
#include "tests/comm/comm_test_util.hpp"
#include "tests/support/spawn.hpp"
#include "tests/support/test_groups.hpp"

namespace distlab::testing {
namespace {

using namespace std::chrono_literals;

const std::map<std::string, std::string> kSteppedOptions = {{"shm.slot_bytes", "4096"},
                                                             {"shm.eager_bytes", "0"}};
// float32 elements per rank: three slots and a bit, so the last step is short.
constexpr int64_t kPart = 3 * 1024 + 17;

// Rank r's values: distinct per rank and element, exact in float32.
Tensor partOf(int rank) { return arange(0.0, kPart, 1.0).add(Scalar(10000.0 * rank)); }

Tensor allParts(int size) {
  std::vector<Tensor> parts;
  for (int r = 0; r < size; ++r) parts.push_back(partOf(r));
  return cat(parts, 0);
}

TEST(ShmOwnPart, InPlaceFormsLeaveEveryPartRight) {
  spawn(SpawnMode::kProcesses, 3, [](RankContext& ctx) {
    auto g = makeTestGroup(ctx, "shm", "own_part", 20s, kSteppedOptions);
    const int me = ctx.rank, n = 3;

    Tensor gathered = zeros({n * kPart});
    Tensor mine = gathered.narrow(0, me * kPart, kPart);
    mine.copy_(partOf(me));
    g->allgatherIntoTensor(gathered, mine)->wait();
    expectEqualTensor(gathered, allParts(n), "all_gather_into_tensor into its own chunk");

    Tensor summed = allParts(n);  // every rank the same input: the sum is n times it
    Tensor out = summed.narrow(0, me * kPart, kPart);
    g->reduceScatterTensor(out, summed)->wait();
    expectEqualTensor(out, partOf(me).mul(Scalar(n)), "reduce_scatter_tensor out of its chunk");

    Tensor input = partOf(me);
    std::vector<Tensor> outputs;
    if (me == 1) {
      for (int r = 0; r < n; ++r) outputs.push_back(r == 1 ? input : zeros({kPart}));
    }
    g->gather(outputs, input, {.rootRank = 1})->wait();
    for (size_t r = 0; r < outputs.size(); ++r) {
      expectEqualTensor(outputs[r], partOf(static_cast<int>(r)), "gather into its input");
    }

    std::vector<Tensor> inputs;
    Tensor received = zeros({kPart});
    if (me == 2) {
      for (int r = 0; r < n; ++r) inputs.push_back(r == 2 ? received : partOf(r));
      received.copy_(partOf(2));
    }
    g->scatter(received, inputs, {.rootRank = 2})->wait();
    expectEqualTensor(received, partOf(me), "scatter from its output");
  });
}

TEST(ShmOwnPart, PremulSumReduceScalesEachContributionOnce) {
  spawn(SpawnMode::kProcesses, 2, [](RankContext& ctx) {
    auto g = makeTestGroup(ctx, "shm", "own_part_premul", 20s, kSteppedOptions);
    const double scalar = ctx.rank == 0 ? 0.5 : 2.0;  // powers of two: exact
    Tensor t = partOf(ctx.rank);
    g->reduce(t, {.reduceOp = comm::ReduceOp::premulSum(scalar), .rootRank = 0})->wait();
    const Tensor expected = ctx.rank == 0
                                ? partOf(0).mul(Scalar(0.5)).add(partOf(1).mul(Scalar(2.0)))
                                : partOf(1);
    expectEqualTensor(t, expected, ctx.rank == 0 ? "the root's sum" : "a leaf's input, unscaled");
  });
}

}  // namespace
}  // namespace distlab::testing
