// Engine "ddp": DistributedDataParallel (runtime/ddp) with its options and the
// built-in communication hooks. Options use PyTorch's argument names.
#include <fmt/format.h>

#include "emulator/workloads/engine_registry.hpp"
#include "emulator/workloads/training_engine.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/ddp/comm_hooks/default_hooks.hpp"
#include "runtime/ddp/comm_hooks/powersgd_hook.hpp"
#include "runtime/ddp/distributed_data_parallel.hpp"
#include "runtime/zero/zero_ddp_hook.hpp"

namespace distlab::emulator {

namespace {

bool boolOption(const std::map<std::string, std::string>& o, const std::string& key, bool dflt) {
  auto it = o.find(key);
  return it == o.end() ? dflt : it->second == "true";
}

ddp::DDPOptions ddpOptions(const std::map<std::string, std::string>& o) {
  ddp::DDPOptions d;
  if (auto it = o.find("bucket_cap_mb"); it != o.end()) d.bucketCapMb = std::stod(it->second);
  d.broadcastBuffers = boolOption(o, "broadcast_buffers", d.broadcastBuffers);
  d.findUnusedParameters = boolOption(o, "find_unused_parameters", d.findUnusedParameters);
  d.gradientAsBucketView = boolOption(o, "gradient_as_bucket_view", d.gradientAsBucketView);
  d.staticGraph = boolOption(o, "static_graph", d.staticGraph);
  return d;
}

void registerHook(ddp::DistributedDataParallel& model, const std::string& hook,
                  const std::map<std::string, std::string>& o, const comm::ProcessGroupPtr& pg) {
  if (hook.empty() || hook == "none") return;  // DDP's built-in allreduce
  if (hook == "allreduce") return model.registerCommHook({}, ddp::allreduceHook, "allreduce_hook");
  if (hook == "fp16_compress") {
    return model.registerCommHook({}, ddp::fp16CompressHook, "fp16_compress_hook");
  }
  if (hook == "bf16_compress") {
    return model.registerCommHook({}, ddp::bf16CompressHook, "bf16_compress_hook");
  }
  if (hook == "noop") return model.registerCommHook({}, ddp::noopHook, "noop_hook");
  ddp::PowerSGDOptions p;
  if (auto it = o.find("matrix_approximation_rank"); it != o.end()) {
    p.matrixApproximationRank = std::stoll(it->second);
  }
  p.startPowerSGDIter = 2;  // compress from the third step (scenarios are short)
  if (auto it = o.find("start_powersgd_iter"); it != o.end()) p.startPowerSGDIter = std::stoll(it->second);
  auto state = std::make_shared<ddp::PowerSGDState>(pg, p);
  if (hook == "powersgd") return model.registerCommHook(state, ddp::powerSgdHook, "powerSGD_hook");
  model.registerCommHook(state, ddp::batchedPowerSgdHook, "batched_powerSGD_hook");
}

class DdpEngine : public TrainingEngine {
 public:
  explicit DdpEngine(const EngineContext& ctx) {
    const auto& tr = *ctx.training;
    model_ = std::make_shared<ddp::DistributedDataParallel>(ctx.module, ctx.group,
                                                            ddpOptions(tr.engineOptions));
    // With overlap_with_ddp the hook is ZeRO's, registered by overlapZero.
    if (!tr.overlapWithDdp) registerHook(*model_, tr.commHook, tr.engineOptions, ctx.group);
  }
  void overlapZero(zero::ZeroRedundancyOptimizer& zero) override {
    model_->registerCommHook({}, zero::hookWithZeroStep(ddp::allreduceHook, *model_, zero),
                             "hook_with_zero_step");
  }
  nn::TensorList forward(const Tensor& input) override { return model_->call({input}); }
  void setGradSync(bool enabled) override { model_->setRequireBackwardGradSync(enabled); }
  std::vector<Tensor> parameters() override { return model_->module().parameters(); }
  join::Joinable* joinable() override { return model_.get(); }

 private:
  std::shared_ptr<ddp::DistributedDataParallel> model_;
};

}  // namespace

void registerDdpEngine() {
  EngineInfo info;
  info.name = "ddp";
  info.options = {{"bucket_cap_mb", OptionType::kFloat},
                  {"broadcast_buffers", OptionType::kBool},
                  {"find_unused_parameters", OptionType::kBool},
                  {"gradient_as_bucket_view", OptionType::kBool},
                  {"static_graph", OptionType::kBool},
                  {"matrix_approximation_rank", OptionType::kInt},
                  {"start_powersgd_iter", OptionType::kInt}};
  // 1 TiB of bucket and PowerSGD settings far past any model here: numbers
  // the runtime can turn into sizes and counts without overflow.
  info.optionRanges = {{"bucket_cap_mb", {0, 1 << 20}},
                       {"matrix_approximation_rank", {1, 1 << 16}},
                       {"start_powersgd_iter", {0, 1 << 30}}};
  info.commHooks = {"none", "allreduce", "fp16_compress", "bf16_compress", "noop", "powersgd",
                    "batched_powersgd"};
  info.distributed = true;
  info.joinable = true;
  info.factory = [](const EngineContext& ctx) { return std::make_unique<DdpEngine>(ctx); };
  registerEngine(std::move(info));
}

}  // namespace distlab::emulator
