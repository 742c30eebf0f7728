// The training driver: data, loss, optimizer, the engine-level faults
// (skip_backward, unused_param, uneven_data, bit_flip: injected here, never
// inside an engine) and the single-process reference.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <tuple>

#include "emulator/workloads/engine_registry.hpp"
#include "emulator/workloads/layer_compute.hpp"
#include "emulator/workloads/reference_check.hpp"
#include "emulator/workloads/scenario_data.hpp"
#include "emulator/workloads/training_engine.hpp"
#include "emulator/workloads/training_model.hpp"
#include "emulator/workloads/workloads.hpp"
#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/trace.hpp"
#include "runtime/optim/adam.hpp"
#include "runtime/optim/optimizer_factory.hpp"
#include "runtime/optim/sgd.hpp"
#include "runtime/zero/zero_redundancy_optimizer.hpp"

namespace distlab::emulator {

namespace {

std::unique_ptr<optim::Optimizer> makeOptimizer(const TrainingWorkload& tr,
                                                std::vector<Tensor> params) {
  if (tr.optimizer == "adam") {
    optim::AdamOptions o;
    o.lr = tr.lr;
    return std::make_unique<optim::Adam>(std::move(params), o);
  }
  if (tr.optimizer == "adamw") {
    optim::AdamWOptions o;
    o.lr = tr.lr;
    return std::make_unique<optim::AdamW>(std::move(params), o);
  }
  optim::SgdOptions o;
  o.lr = tr.lr;
  return std::make_unique<optim::SGD>(std::move(params), o);
}

bool syncStep(const TrainingWorkload& tr, int step) {
  return tr.noSyncEvery <= 1 || (step + 1) % tr.noSyncEvery == 0;
}

// "parameter 2 holds nan" for the first parameter with a non-finite element.
std::optional<std::string> nonFiniteParameter(const std::vector<Tensor>& params) {
  for (size_t i = 0; i < params.size(); ++i) {
    for (double v : params[i].to(DType::kFloat64).contiguous().toVector<double>()) {
      if (!std::isfinite(v)) return fmt::format("parameter {} holds {}", i, v);
    }
  }
  return std::nullopt;
}

// The run's optimizer: the plain one, or (optimizer_sharding = "zero")
// ZeroRedundancyOptimizer around the same kind.
struct RunOptimizer {
  std::unique_ptr<optim::Optimizer> plain;
  std::unique_ptr<zero::ZeroRedundancyOptimizer> zero;
  void stepAndZeroGrad() {
    if (zero) {
      zero->step();
      zero->zeroGrad();
    } else {
      plain->step();
      plain->zeroGrad();
    }
  }
};

RunOptimizer makeRunOptimizer(const TrainingWorkload& tr, const std::vector<Tensor>& params,
                              const comm::ProcessGroupPtr& world) {
  RunOptimizer out;
  if (tr.optimizerSharding != "zero") {
    out.plain = makeOptimizer(tr, params);
    return out;
  }
  zero::ZeroOptions zo;
  zo.parametersAsBucketView = tr.parametersAsBucketView;
  zo.overlapWithDdp = tr.overlapWithDdp;
  out.zero = std::make_unique<zero::ZeroRedundancyOptimizer>(
      params, optim::optimizerFactory(tr.optimizer), world, zo, optim::Options{{"lr", tr.lr}});
  return out;
}

// The engine first, then ZeRO (its hook steps with the gradients DDP's left).
// FSDP's Joinable steps the shards itself with the run's optimizer (Note [FSDP
// under Join] in runtime/fsdp/fsdp_join.hpp; the parser refuses ZeRO there).
std::unique_ptr<join::Join> makeJoin(const TrainingWorkload& tr, TrainingEngine& engine,
                                     RunOptimizer& opt) {
  engine.setJoinOptimizer(opt.plain.get());
  std::vector<join::Joinable*> joinables{engine.joinable()};
  if (opt.zero) joinables.push_back(opt.zero.get());
  join::JoinOptions o;
  o.throwOnEarlyTermination = tr.throwOnEarlyTermination;
  o.kwargs.flags["divide_by_initial_world_size"] = tr.divideByInitialWorldSize;
  return std::make_unique<join::Join>(std::move(joinables), std::move(o));
}

}  // namespace

namespace {

// Note [Loss on one batch]
// loss_decreased compares the loss on one fixed batch (rank 0's batch of step
// 0, the same on every rank) with the initial and with the final parameters:
// each step's loss is on that step's own batch, and two batches' losses differ
// more than a few steps of training change them (world 3 FSDP once went 1.68
// -> 2.53 between two batches while training worked). The probe is a local
// copy of the model, built as the engine's was (the same seed) and loaded
// with the engine's full parameters at the end (referenceParameters: a
// sharding engine gathers them, a collective every rank issues after its last
// step); it runs without grad and outside every engine, so it adds no
// collective to the steps and no fault sees it.
class ProbeLoss {
 public:
  ProbeLoss(const TrainingWorkload& tr, int worldSize, bool useAux, Device device)
      : model_(buildScenarioModel(tr, device)), useAux_(useAux) {
    setAuxUsed(*model_, useAux);
    std::tie(x_, y_) = scenarioBatch(tr, worldSize, 0, 0, device);
  }
  double now() {
    autograd::NoGradGuard noGrad;
    trace::SuppressGuard untraced;  // not this rank's training work
    return scenarioLoss(model_->forwardAll({x_}), y_, useAux_).item<double>();
  }
  void load(const std::vector<Tensor>& full) {
    autograd::NoGradGuard noGrad;
    auto params = model_->parameters();
    DL_CHECK(params.size() == full.size(), "probe model: ", params.size(), " parameters, the "
             "engine gave ", full.size());
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(full[i]);
  }

 private:
  std::shared_ptr<nn::Module> model_;
  bool useAux_;
  Tensor x_, y_;
};

}  // namespace

void runTrainingWorkload(const TrainingWorkload& tr, const TrainingRunOptions& options, int rank,
                         const comm::ProcessGroupPtr& world, FaultPlan& plan, RankResult& result) {
  const EngineInfo* info = findEngine(tr.engine);
  EngineContext ctx;
  ctx.training = &tr;
  ctx.rank = rank;
  ctx.worldSize = options.worldSize;
  ctx.device = options.device;
  ctx.module = buildScenarioModel(tr, options.device);
  emulateLayerCompute(*ctx.module, tr.layerCompute);  // Note [Emulated layer compute]
  nn::labelModulesForTrace(*ctx.module);
  ctx.group = world;
  auto engine = info->factory(ctx);
  auto params = engine->parameters();
  RunOptimizer opt = makeRunOptimizer(tr, params, world);
  if (opt.zero && tr.overlapWithDdp) engine->overlapZero(*opt.zero);
  const bool auxUnused = plan.engineFault("unused_param", -1) != nullptr;
  if (auxUnused) {
    setAuxUsed(*ctx.module, false);
    plan.log().write("fault unused_param seq=0 step=-1 aux head not run");
  }
  // Note [Checking an engine against the single-process reference].
  std::unique_ptr<ReferenceChecker> reference;
  if (options.checkReference && rank == 0) {
    reference = std::make_unique<ReferenceChecker>(
        tr, options.worldSize, info->distributed ? options.worldSize : 1, options.device);
  }
  // Note [Join in the training driver]: with join = true the whole loop is
  // the Join scope; a rank that ran out of batches shadows in exit().
  std::unique_ptr<join::Join> joinScope;
  if (tr.join) joinScope = makeJoin(tr, *engine, opt);
  std::optional<ProbeLoss> probe;
  if (options.probeLoss) {
    probe.emplace(tr, options.worldSize, !auxUnused, options.device);
    result.probeLossBefore = probe->now();
  }
  const int batches = tr.batchesOf(rank);
  for (int step = 0; step < batches; ++step) {
    plan.beginStep(step);
    if (step == tr.steps) {  // the first batch the other ranks do not have
      if (const FaultSpec* f = plan.engineFault("uneven_data", step)) {
        plan.recordFired(*f, 0, fmt::format("{} extra batches", f->extraBatches));
      }
    }
    // The step: data, forward, backward, optimizer (its span ends before the
    // non-finite scan, which is the harness's work, not training's).
    std::optional<trace::Span> stepSpan;
    stepSpan.emplace(trace::Category::kStep, "step ",
                     trace::enabled() ? std::to_string(step) : std::string());
    Stopwatch stepWatch;
    engine->setGradSync(syncStep(tr, step));
    auto [x, y] = scenarioBatch(tr, options.worldSize, rank, step, options.device);
    Tensor loss = scenarioLoss(engine->forward(x), y, !auxUnused);
    result.losses.push_back(loss.item<double>());
    if (!std::isfinite(result.losses.back())) {
      noteNonFinite(result, step, fmt::format("loss = {}", result.losses.back()));
    }
    if (const FaultSpec* f = plan.engineFault("skip_backward", step)) {
      plan.recordFired(*f, 0, "backward skipped");
    } else {
      autograd::backward(loss);
      engine->finishBackward();
    }
    plan.applyGradientFaults(step, params);
    if (options.checkReference) {
      auto full = engine->referenceParameters();
      if (reference) {
        trace::SuppressGuard untraced;  // the single-process reference is not this rank's work
        reference->afterBackward(step, syncStep(tr, step), full);
      }
    }
    if (syncStep(tr, step)) {
      opt.stepAndZeroGrad();
      if (options.checkReference) {
        auto full = engine->referenceParameters();
        if (reference) {
          trace::SuppressGuard untraced;
          reference->afterOptimizerStep(full);
        }
      }
    }
    result.stepMs.push_back(stepWatch.elapsedSeconds() * 1000);
    stepSpan.reset();
    if (result.nonFiniteStep < 0) {  // Note [Non-finite numbers in result files]
      if (auto what = nonFiniteParameter(params)) noteNonFinite(result, step, *what);
    }
    result.stepsRun = step + 1;
  }
  if (joinScope) {
    plan.log().write(fmt::format("join: out of batches after {} steps", batches));
    joinScope->exit();
    plan.log().write(fmt::format("join: shadowed {} iterations", joinScope->shadowedIterations()));
  }
  if (probe) {
    probe->load(engine->referenceParameters());
    result.probeLossAfter = probe->now();
  }
  result.paramChecksum = tensorsChecksum(engine->checksumParameters());
  if (reference) {
    const ReferenceVerdict& v = reference->verdict();
    result.referenceChecked = v.checked;
    result.referenceWithinBound = v.withinBound;
    result.referenceWorstRatio = v.worstRatio;
    result.referenceDetail = v.detail;
  }
}

}  // namespace distlab::emulator
