#pragma once
// Shared helpers of the FSDP tests: worlds of thread ranks over shm, wrapping
// the test models per block or at the root only, an FSDP training loop and its
// results (full parameters, collective counts, memory).
// Models, data, the reference trainer and the parity measure are the DDP
// tests' (tests/ddp/ddp_test_util.hpp).
#include <functional>
#include <vector>

#include "runtime/fsdp/fsdp_state_dict.hpp"
#include "runtime/fsdp/fully_shard.hpp"
#include "tests/ddp/ddp_test_util.hpp"

namespace distlab::testing {

// kListBlocks (MLP only): layers.0 and layers.2 as one group
// (fullyShard({...})), layers.4 alone, then the root.
enum class Wrap { kPerBlock, kRootOnly, kListBlocks };

// Runs fn on `world` thread ranks, each with its own default shm group.
void withWorld(int world, const std::function<void(RankContext&)>& fn);

// fullyShard on each block (MLP: every Linear of `layers`; GPT: every `h.<i>`)
// then on the root, or on the root only. Returns the root's FSDPModule.
fsdp::FSDPModulePtr shardModel(const std::shared_ptr<nn::Module>& model, ModelKind kind, Wrap wrap,
                               const fsdp::FullyShardOptions& options = {});

struct FsdpConfig {
  TrainConfig train;
  Wrap wrap = Wrap::kPerBlock;
  fsdp::FullyShardOptions options;
  // Splits each step's local batch in two halves, the first with gradient sync
  // off -- or, with deferWait, synced but not the last backward
  // (setIsLastBackward(false): its reduce-scatters are not waited for).
  bool accumulate = false;
  bool deferWait = false;
  // Called after sharding, before training (controls, prefetch lists).
  std::function<void(fsdp::FSDPModule& root)> setup;
};

struct FsdpRun {
  std::vector<Tensor> params;  // full parameters, namedParameters() order
  fsdp::CommCounts counts;     // summed over the groups
  fsdp::MemoryStats memory;
  std::vector<double> losses;
};

FsdpRun trainFsdp(const RankContext& ctx, const FsdpConfig& config);
// One training step of `model` on this rank's part of step `step`'s batch.
double trainStep(const RankContext& ctx, nn::Module& model, optim::Optimizer& opt,
                 const TrainConfig& config, int step);
// Full parameters of the sharded model (collective), namedParameters() order.
std::vector<Tensor> fullParameters(fsdp::FSDPModule& root);
fsdp::CommCounts sumCounts(fsdp::FSDPModule& root);

}  // namespace distlab::testing
