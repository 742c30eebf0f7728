#pragma once
// torch.utils.data.distributed.DistributedSampler: the indices of a dataset
// this rank reads, so that the ranks of a data-parallel job read disjoint
// parts of it, each the same number of samples.
//
//   data::DistributedSampler sampler(datasetSize);   // num_replicas, rank: the world's
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     sampler.setEpoch(epoch);                      // a new order each epoch
//     for (int64_t i : sampler.indices()) ...
//   }
//
// PyTorch's semantics:
//   - numSamples() = ceil(size / numReplicas); with dropLast and a size not
//     divisible by numReplicas, ceil((size - numReplicas) / numReplicas)
//     (the tail is dropped so every rank gets the same count);
//     totalSize() = numSamples() * numReplicas;
//   - indices(): 0..size-1, shuffled with the seed `seed + epoch` when
//     `shuffle` (the same order on every rank that uses the same seed and
//     epoch); without dropLast padded to totalSize() by repeating the list
//     from its start (as many times as needed when it is shorter than the
//     padding); with it cut to totalSize(); then every numReplicas-th index
//     from position `rank`.
// The shuffled order is distlab's own (a Fisher-Yates shuffle driven by
// distlab's Generator, runtime/tensor/generator.hpp), deterministic on every
// platform; it is not the order torch.randperm gives for the same seed.
#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/comm/process_group.hpp"

namespace distlab::data {

// Note [Uneven shares under a scenario]
// The scenario machinery's uneven_data fault for a user's program
// (emulator/program/) sets a process-wide source of extra samples: a sampler
// built afterwards in this process appends that many indices to its share,
// repeating the share from its start, so this rank runs more batches than its
// peers, as with uneven inputs (what Join is for). Unset (the default): none.
void setExtraSamplesSource(std::function<int64_t()> source);

struct DistributedSamplerOptions {
  int numReplicas = -1;   // -1: the size of `group` (default: the world)
  int rank = -1;          // -1: this process's rank in `group`
  bool shuffle = true;
  uint64_t seed = 0;
  bool dropLast = false;
  comm::ProcessGroupPtr group;  // for the defaults; nullptr: the default group
};

class DistributedSampler {
 public:
  // ValueError for a negative size, numReplicas < 1, "Invalid rank R, rank
  // should be in the interval [0, N-1]", or a default that needs a process
  // group when none is initialized (the message says to pass both).
  DistributedSampler(int64_t datasetSize, const DistributedSamplerOptions& options = {});

  // PyTorch set_epoch: the shuffle seed becomes seed + epoch. Call it before
  // each epoch, or every epoch reads the same order.
  void setEpoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }

  std::vector<int64_t> indices() const;  // numSamples() of them
  // This rank's share, extra samples included (Note [Uneven shares under a
  // scenario]); without them the same on every rank.
  int64_t numSamples() const { return numSamples_ + extra_; }
  int64_t totalSize() const { return numSamples_ * numReplicas_; }
  int numReplicas() const { return numReplicas_; }
  int rank() const { return rank_; }

 private:
  int64_t size_;
  int numReplicas_;
  int rank_;
  bool shuffle_;
  uint64_t seed_;
  bool dropLast_;
  int64_t numSamples_;
  int64_t extra_ = 0;
  int64_t epoch_ = 0;
};

}  // namespace distlab::data
