#include "tests/ddp/ddp_test_util.hpp"

#include <algorithm>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/nn/layers.hpp"
#include "runtime/nn/loss.hpp"
#include "runtime/nn/models/gpt.hpp"
#include "runtime/nn/models/mlp.hpp"
#include "runtime/optim/adam.hpp"
#include "runtime/optim/sgd.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "tests/support/test_groups.hpp"

namespace distlab::testing {
namespace {

constexpr int64_t kMlpIn = 16;
constexpr int64_t kClasses = 4;
constexpr int64_t kVocab = 32;
constexpr int64_t kSeqLen = 8;

}  // namespace

std::unique_ptr<optim::Optimizer> makeOptimizer(OptimKind kind, std::vector<Tensor> params,
                                                double lr) {
  if (kind == OptimKind::kSgd) {
    optim::SgdOptions o;
    o.lr = lr;
    o.momentum = 0.9;
    return std::make_unique<optim::SGD>(std::move(params), o);
  }
  optim::AdamWOptions o;
  o.lr = lr / 5;
  // See Note [AdamW eps in parity tests] in ddp_test_util.hpp.
  o.eps = 1e-4;
  return std::make_unique<optim::AdamW>(std::move(params), o);
}

std::string modelName(ModelKind kind) { return kind == ModelKind::kMlp ? "Mlp" : "Gpt"; }

comm::ProcessGroupPtr makeGroup(const RankContext& ctx, const std::string& name,
                                std::chrono::milliseconds timeout) {
  return makeTestGroup(ctx, "shm", name, timeout);
}

std::shared_ptr<nn::Module> makeModel(ModelKind kind, uint64_t seed) {
  Generator gen(seed);
  if (kind == ModelKind::kMlp) {
    nn::MlpOptions o;
    o.inputDim = kMlpIn;
    o.hidden = 32;
    o.depth = 2;
    o.outputDim = kClasses;
    return std::make_shared<nn::Mlp>(o, gen);
  }
  nn::GptOptions o;
  o.vocabSize = kVocab;
  o.blockSize = kSeqLen;
  o.nEmbd = 16;
  o.nHead = 2;
  o.nLayer = 1;
  return std::make_shared<nn::Gpt>(o, gen);
}

Batch globalBatch(ModelKind kind, int64_t rows, int step) {
  Generator gen(1000 + static_cast<uint64_t>(step));
  if (kind == ModelKind::kMlp) {
    return {randn({rows, kMlpIn}, gen), randint(0, kClasses, {rows}, gen)};
  }
  return {randint(0, kVocab, {rows, kSeqLen}, gen), randint(0, kVocab, {rows, kSeqLen}, gen)};
}

Batch shard(const Batch& batch, int rank, int64_t per) {
  return {batch.x.narrow(0, rank * per, per).contiguous(),
          batch.y.narrow(0, rank * per, per).contiguous()};
}

Tensor lossOf(ModelKind kind, const Tensor& logits, const Tensor& targets) {
  if (kind == ModelKind::kMlp) return nn::crossEntropyLoss(logits, targets);
  return nn::crossEntropyLoss(ops::reshape(logits, {-1, kVocab}), targets.reshape({-1}));
}

std::vector<Tensor> copies(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) out.push_back(t.detach().clone());
  return out;
}

std::vector<Tensor> trainReference(const TrainConfig& config, int worldSize, int rank) {
  auto model = makeModel(config.model);
  auto opt = makeOptimizer(config.optim, model->parameters(), config.lr);
  for (int step = 0; step < config.steps; ++step) {
    Batch batch = globalBatch(config.model, worldSize * config.perRank, step);
    if (rank >= 0) batch = shard(batch, rank, config.perRank);
    opt->zeroGrad();
    Tensor loss = lossOf(config.model, model->forward(batch.x), batch.y);
    autograd::backward(loss);
    opt->step();
  }
  return copies(model->parameters());
}

DdpRun trainDdp(const RankContext& ctx, const comm::ProcessGroupPtr& group,
                const TrainConfig& config, const ddp::DDPOptions& options,
                const HookInstaller& hook, bool noSyncMicro) {
  std::shared_ptr<nn::Module> model;
  {
    DefaultDeviceGuard onDevice(config.device);
    model = makeModel(config.model);
  }
  ddp::DistributedDataParallel ddp(model, group, options);
  if (hook) hook(ddp);
  auto opt = makeOptimizer(config.optim, model->parameters(), config.lr);
  DdpRun run;
  for (int step = 0; step < config.steps; ++step) {
    Batch local = shard(globalBatch(config.model, ctx.worldSize * config.perRank, step),
                        ctx.rank, config.perRank);
    local = {local.x.to(config.device), local.y.to(config.device)};
    opt->zeroGrad();
    if (noSyncMicro) {
      const int64_t half = config.perRank / 2;
      double total = 0;
      {
        auto guard = ddp.noSync();
        Tensor loss = lossOf(config.model, ddp.forward(local.x.narrow(0, 0, half)),
                             local.y.narrow(0, 0, half));
        autograd::backward(ops::mul(loss, 0.5));
        total += loss.item<double>() * 0.5;
      }
      Tensor loss = lossOf(config.model, ddp.forward(local.x.narrow(0, half, half)),
                           local.y.narrow(0, half, half));
      autograd::backward(ops::mul(loss, 0.5));
      run.losses.push_back(total + loss.item<double>() * 0.5);
    } else {
      Tensor loss = lossOf(config.model, ddp.forward(local.x), local.y);
      autograd::backward(loss);
      run.losses.push_back(loss.item<double>());
    }
    opt->step();
  }
  for (const Tensor& p : model->parameters()) run.params.push_back(p.detach().to(Device::cpu()).clone());
  run.stats = ddp.loggingData();
  return run;
}

double maxRelativeError(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = a[i].to(DType::kFloat64).sub(b[i].to(DType::kFloat64)).abs().max()
                            .item<double>();
    const double scale = std::max(b[i].to(DType::kFloat64).abs().max().item<double>(), 1e-12);
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

Tensor flatten(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> flat;
  for (const Tensor& t : tensors) flat.push_back(t.to(DType::kFloat64).reshape({-1}));
  return cat(flat);
}

bool identicalAcrossRanks(const comm::ProcessGroupPtr& group, const std::vector<Tensor>& params) {
  Tensor mine = flatten(params);
  std::vector<Tensor> all;
  for (int r = 0; r < group->size(); ++r) all.push_back(emptyLike(mine));
  group->allgather(all, mine)->wait();
  return std::all_of(all.begin(), all.end(), [&](const Tensor& t) { return t.equal(mine); });
}

Branchy::Branchy(bool useA) : nn::Module("Branchy"), useA_(useA) {
  Generator gen(1);
  a_ = registerModule("a", std::make_shared<nn::Linear>(10, 10, gen, false));
  b_ = registerModule("b", std::make_shared<nn::Linear>(10, 1, gen, false));
}

nn::TensorList Branchy::forwardAll(const nn::TensorList& in) {
  return useA_ ? b_->call(a_->call(in)) : b_->call(in);
}

Tensor sameInput(int rows) {
  Generator gen(3);
  return randn({rows, 10}, gen);
}

}  // namespace distlab::testing
