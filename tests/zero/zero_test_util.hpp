#pragma once
// Helpers shared by the ZeroRedundancyOptimizer tests.
#include <string>

#include "runtime/autograd/engine.hpp"
#include "runtime/ddp/distributed_data_parallel.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/ddp/ddp_test_util.hpp"

namespace distlab::testing {

inline constexpr int64_t kZeroRowsPerRank = 4;

inline optim::Options zeroDefaultsOf(const std::string& kind) {
  if (kind == "sgd") return {{"lr", 0.05}, {"momentum", 0.9}};
  return {{"lr", 0.01}, {"eps", 1e-4}};  // Note [AdamW eps in parity tests]
}

// A training step's forward and backward on this rank's shard through `ddp`.
inline void zeroBackwardStep(ddp::DistributedDataParallel& ddp, const RankContext& ctx,
                             int step) {
  Batch b = shard(globalBatch(ModelKind::kMlp, ctx.worldSize * kZeroRowsPerRank, step), ctx.rank,
                  kZeroRowsPerRank);
  autograd::backward(lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y));
}

}  // namespace distlab::testing
