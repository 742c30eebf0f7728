#include "tests/fsdp/fsdp_test_util.hpp"

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/comm/group_management.hpp"

namespace distlab::testing {

void withWorld(int world, const std::function<void(RankContext&)>& fn) {
  spawn(SpawnMode::kThreads, world, [&](RankContext& ctx) {
    comm::ThreadWorldScope scope;
    comm::initProcessGroup({.backend = "shm", .store = ctx.store, .worldSize = world,
                            .rank = ctx.rank, .timeout = std::chrono::seconds(30)});
    fn(ctx);
    comm::destroyProcessGroup();
  }, SpawnOptions{.timeout = std::chrono::seconds(120)});
}

fsdp::FSDPModulePtr shardModel(const std::shared_ptr<nn::Module>& model, ModelKind kind, Wrap wrap,
                               const fsdp::FullyShardOptions& options) {
  if (wrap == Wrap::kListBlocks) {
    auto layers = model->child("layers");
    fsdp::fullyShard({layers->child("0"), layers->child("2")}, options);
    fsdp::fullyShard(layers->child("4"), options);
  }
  if (wrap == Wrap::kPerBlock) {
    auto blocks = model->child(kind == ModelKind::kMlp ? "layers" : "h");
    for (const auto& [name, child] : blocks->namedChildren()) {
      if (!child->parameters().empty()) fsdp::fullyShard(child, options);
    }
  }
  return fsdp::fullyShard(model, options);
}

double trainStep(const RankContext& ctx, nn::Module& model, optim::Optimizer& opt,
                 const TrainConfig& config, int step) {
  Batch local = shard(globalBatch(config.model, ctx.worldSize * config.perRank, step), ctx.rank,
                      config.perRank);
  opt.zeroGrad();
  Tensor loss = lossOf(config.model, model.forward(local.x), local.y);
  autograd::backward(loss);
  opt.step();
  return loss.item<double>();
}

// Two half-batches, the first without gradient sync (or, deferWait, not the
// last backward), each loss halved.
double accumulateStep(const RankContext& ctx, nn::Module& model, fsdp::FSDPModule& root,
                      optim::Optimizer& opt, const FsdpConfig& fc, int step) {
  const TrainConfig& config = fc.train;
  Batch local = shard(globalBatch(config.model, ctx.worldSize * config.perRank, step), ctx.rank,
                      config.perRank);
  opt.zeroGrad();
  const int64_t half = config.perRank / 2;
  double total = 0;
  for (int part = 0; part < 2; ++part) {
    if (fc.deferWait) {
      root.setIsLastBackward(part == 1);
    } else {
      root.setRequiresGradientSync(part == 1);
    }
    Tensor loss = lossOf(config.model, model.forward(local.x.narrow(0, part * half, half)),
                         local.y.narrow(0, part * half, half));
    autograd::backward(ops::mul(loss, 0.5));
    total += loss.item<double>() * 0.5;
  }
  opt.step();
  return total;
}

std::vector<Tensor> fullParameters(fsdp::FSDPModule& root) {
  nn::StateDict full = fsdp::fullStateDict(root, comm::getRank());
  std::vector<Tensor> out;
  for (const auto& [fqn, t] : fsdp::rootNamedParameters(root)) out.push_back(full.at(fqn));
  return out;
}

fsdp::CommCounts sumCounts(fsdp::FSDPModule& root) {
  fsdp::CommCounts c;
  for (auto& s : root.fsdpModulesInTree()) {
    c.allGathers += s->commCounts().allGathers;
    c.postForwardAllGathers += s->commCounts().postForwardAllGathers;
    c.reduceScatters += s->commCounts().reduceScatters;
    c.allReduces += s->commCounts().allReduces;
  }
  return c;
}

FsdpRun trainFsdp(const RankContext& ctx, const FsdpConfig& config) {
  const TrainConfig& tc = config.train;
  auto model = makeModel(tc.model);
  auto root = shardModel(model, tc.model, config.wrap, config.options);
  if (config.setup) config.setup(*root);
  auto opt = makeOptimizer(tc.optim, model->parameters(), tc.lr);
  FsdpRun run;
  for (int step = 0; step < tc.steps; ++step) {
    run.losses.push_back(config.accumulate ? accumulateStep(ctx, *model, *root, *opt, config, step)
                                           : trainStep(ctx, *model, *opt, tc, step));
  }
  run.counts = sumCounts(*root);
  run.memory = root->memoryStats();
  run.params = fullParameters(*root);
  return run;
}

}  // namespace distlab::testing
