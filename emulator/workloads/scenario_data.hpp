#pragma once
// The data a training workload reads, through data::DistributedSampler as a
// user's data-parallel program reads its own.
//
// Note [Scenario data]
// The dataset holds worldSize * kBatchesPerEpoch * batchSize samples, each
// drawn from its own generator (the workload's seed and the sample's index),
// so a batch costs what its own samples cost. Rank r reads the share a
// DistributedSampler (numReplicas = worldSize, rank = r, shuffle, seed = the
// workload's seed) gives it: step s is batch s % kBatchesPerEpoch of epoch
// s / kBatchesPerEpoch (set_epoch: a new order each epoch, the shares of one
// epoch disjoint). A rank given extra batches (uneven_data) simply reads
// further epochs. Few distinct samples make a short run's loss fall clearly
// (fresh samples every step are too noisy for that).
//   - mlp, residual_mlp, two_layer: x ~ N(0, 1) of the model's input width,
//     y = x . teacher, a fixed random linear map scaled by 1/sqrt(width);
//   - gpt: token ids uniform in [0, vocab) over the block, the target of
//     each position (its token + the previous one) % vocab.
#include <cstdint>
#include <utility>

#include "emulator/workloads/workload_spec.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::emulator {

inline constexpr int kBatchesPerEpoch = 2;

// (x, y) of `rank`'s batch `step` in a world of `worldSize` ranks, made on
// the host (the same bits on every machine) and then copied to `device`.
std::pair<Tensor, Tensor> scenarioBatch(const TrainingWorkload& tr, int worldSize, int rank,
                                        int step, Device device = Device::cpu());

}  // namespace distlab::emulator
