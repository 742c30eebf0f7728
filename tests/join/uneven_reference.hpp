#pragma once
// The uneven-input workload shared by the DDP and FSDP Join tests: the MLP of
// tests/ddp/ddp_test_util.hpp, kPerRank rows per rank and step, SGD with
// momentum, and the hand reference those tests compare with.
#include <memory>
#include <vector>

#include "runtime/optim/sgd.hpp"
#include "tests/ddp/ddp_test_util.hpp"

namespace distlab::testing {

inline constexpr int64_t kUnevenRowsPerRank = 4;
inline constexpr double kUnevenLr = 0.05;

// SGD, lr kUnevenLr, momentum 0.9.
std::unique_ptr<optim::SGD> unevenSgd(const std::vector<Tensor>& params);

// Rank `rank`'s batch of step `step` in a world of `worldSize`.
Batch unevenBatch(int worldSize, int rank, int step);

// The parameters after training on `batches[r]` steps per rank, by hand: per
// step, the gradients of the ranks that still have a batch, summed and divided
// by the initial world size (divideByInitial) or by the number of those ranks,
// then one SGD step.
std::vector<Tensor> unevenHandReference(const std::vector<int>& batches, bool divideByInitial);

}  // namespace distlab::testing
