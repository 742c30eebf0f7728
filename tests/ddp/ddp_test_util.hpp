#pragma once
// Shared helpers of the DDP tests: groups, models, data, training loops and
// the parity measures.
//
// Parity measure (stated once for every test): for each parameter tensor,
// relErr = max|a - b| / max|b| (infinity norms; a = DDP, b = reference), and
// the test's number is the maximum over tensors. Element-wise relative errors
// are avoided because parameters near zero would make them meaningless.
//
// Note [AdamW eps in parity tests]
// The AdamW runs use eps = 1e-4 (PyTorch's default is 1e-8). Some gradients
// are mathematically zero: the key bias of causal self-attention (softmax is
// shift-invariant) gets only float32 rounding noise (~1e-9) whose sign depends
// on summation order. With eps = 1e-8 Adam turns that noise into steps of
// about +-lr, so ANY change of reduction order (DDP's per-rank means, a
// micro-batch split, even world size 1 with no_sync) moves such elements by
// ~lr per step (measured 2e-3 relative on the GPT model). eps = 1e-4 keeps the
// update Lipschitz at the noise scale (noise/eps ~ 1e-5 of lr) while real
// gradients (>= 1e-3 here) are still normalised. The DDP semantics under test
// do not depend on eps: reference and DDP runs use the same optimizer.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/process_group.hpp"
#include "runtime/ddp/distributed_data_parallel.hpp"
#include "runtime/nn/module.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/support/spawn.hpp"

namespace distlab::testing {

enum class ModelKind { kMlp, kGpt };
enum class OptimKind { kSgd, kAdamW };
std::string modelName(ModelKind kind);

comm::ProcessGroupPtr makeGroup(const RankContext& ctx, const std::string& name = "ddp",
                                std::chrono::milliseconds timeout = std::chrono::seconds(30));

// SGD with momentum 0.9 at `lr`, or AdamW at lr / 5 (Note [AdamW eps in parity tests]).
std::unique_ptr<optim::Optimizer> makeOptimizer(OptimKind kind, std::vector<Tensor> params,
                                                double lr);

// Identical on every rank for the same seed.
std::shared_ptr<nn::Module> makeModel(ModelKind kind, uint64_t seed = 1234);

// One training step's global batch (inputs and int64 targets) for `kind`.
struct Batch {
  Tensor x;
  Tensor y;
};
Batch globalBatch(ModelKind kind, int64_t rows, int step);
// Rows [rank * per, (rank + 1) * per) of a global batch.
Batch shard(const Batch& batch, int rank, int64_t per);

// Mean cross entropy of the model output (logits flattened for the GPT model).
Tensor lossOf(ModelKind kind, const Tensor& logits, const Tensor& targets);

struct TrainConfig {
  ModelKind model = ModelKind::kMlp;
  OptimKind optim = OptimKind::kSgd;
  int steps = 10;
  int64_t perRank = 4;  // rows per rank per step
  double lr = 0.05;
  // trainDdp builds the model under a DefaultDeviceGuard of it (the same
  // initial values: random factories draw on the host) and moves each batch
  // there; DdpRun::params are host copies.
  Device device = Device::cpu();
};

// Single-process training on the full N * perRank batch (or, with rank >= 0,
// on that rank's shard only); returns the final parameters (copies), in
// namedParameters() order.
std::vector<Tensor> trainReference(const TrainConfig& config, int worldSize, int rank = -1);

// One DDP training run on this rank. `hook` (may be empty) is registered
// before training; `noSyncMicro` splits each step in two micro-batches, the
// first under no_sync. Returns final parameters and the per-step losses.
struct DdpRun {
  std::vector<Tensor> params;
  std::vector<double> losses;
  ddp::DDPLoggingData stats;
};
using HookInstaller = std::function<void(ddp::DistributedDataParallel&)>;
DdpRun trainDdp(const RankContext& ctx, const comm::ProcessGroupPtr& group,
                const TrainConfig& config, const ddp::DDPOptions& options,
                const HookInstaller& hook = {}, bool noSyncMicro = false);

// See the header comment.
double maxRelativeError(const std::vector<Tensor>& a, const std::vector<Tensor>& b);
// True when every rank holds bitwise identical `params` (an allgather).
bool identicalAcrossRanks(const comm::ProcessGroupPtr& group, const std::vector<Tensor>& params);
// Flattened float64 copy of all tensors.
Tensor flatten(const std::vector<Tensor>& tensors);
std::vector<Tensor> copies(const std::vector<Tensor>& tensors);

// Two bias-free linear layers, a (10x10, parameter index 0) and b (1x10, index 1):
// forward computes b(a(x)) when useA, else b(x), so a.weight is then absent from the
// graph (an unused parameter, for find_unused_parameters and bucket-order tests).
class Branchy : public nn::Module {
 public:
  explicit Branchy(bool useA);
  void setUseA(bool useA) { useA_ = useA; }
  nn::TensorList forwardAll(const nn::TensorList& in) override;

 private:
  bool useA_;
  std::shared_ptr<nn::Module> a_, b_;
};

// The same `rows` x 10 input on every rank and every call (seeded).
Tensor sameInput(int rows = 4);

}  // namespace distlab::testing
