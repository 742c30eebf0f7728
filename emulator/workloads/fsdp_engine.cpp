// Engine "fsdp": fullyShard (runtime/fsdp) on the scenario model. Options use
// PyTorch's argument names where one exists:
//   wrap                   "block" (default: every Linear / residual block, then
//                          the root; for model = "gpt" every transformer block
//                          h.<i>, then the root with wte, wpe, ln_f, lm_head)
//                          or "root" (one group)
//   reshard_after_forward  true/false, or an int N dividing the shard world (reshard
//                          to N ranks; 1 == false; unset: PyTorch's default, false
//                          for the root)
//   param_dtype            "float32" (default), "bfloat16" or "float16" (MixedPrecisionPolicy)
//   reduce_dtype           as param_dtype (unset: param_dtype)
//   hsdp_replicas          > 1: a 2-D mesh of hsdp_replicas x (world / hsdp_replicas)
//   root_only_rank         this rank wraps at the root only while the others wrap
//                          per block (a wrapping bug to diagnose); -1: none
//   prefetch               true (default) or false: the implicit forward and
//                          backward prefetches (setImplicitPrefetch; bench overlap)
// With join = true the engine's Joinable is an fsdp::FSDPJoinable over the
// run's world; the driver gives it the optimizer (setJoinOptimizer), which steps a
// joined rank's shards (Note [FSDP under Join] in runtime/fsdp/fsdp_join.hpp).
#include <fmt/format.h>

#include <set>

#include "emulator/workloads/engine_registry.hpp"
#include "emulator/workloads/training_engine.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/fsdp/fsdp_join.hpp"
#include "runtime/fsdp/fsdp_state_dict.hpp"
#include "runtime/fsdp/fully_shard.hpp"

namespace distlab::emulator {
namespace {

std::string option(const std::map<std::string, std::string>& o, const std::string& key,
                   const std::string& dflt) {
  auto it = o.find(key);
  return it == o.end() ? dflt : it->second;
}

// The module types wrap = "block" shards as their own groups. GPT's are its
// transformer blocks only: its lm_head stays in the root group, where a tied
// head shares wte.weight (one parameter cannot live in two groups).
const std::set<std::string>& blockTypes(const TrainingWorkload& tr) {
  static const std::set<std::string> kMlpBlocks = {"Linear", "ResidualBlock"};
  static const std::set<std::string> kGptBlocks = {"GptBlock"};
  return tr.model == "gpt" ? kGptBlocks : kMlpBlocks;
}

// Outermost blocks in pre-order (a block's own sub-blocks stay in its group).
void wrapBlocks(const std::shared_ptr<nn::Module>& m, const std::set<std::string>& blocks,
                const fsdp::FullyShardOptions& o) {
  for (const auto& [name, child] : m->namedChildren()) {
    if (blocks.count(child->typeName()) > 0 && !child->parameters().empty()) {
      fsdp::fullyShard(child, o);
    } else {
      wrapBlocks(child, blocks, o);
    }
  }
}

fsdp::FullyShardOptions shardOptions(const EngineContext& ctx) {
  const auto& o = ctx.training->engineOptions;
  fsdp::FullyShardOptions s;
  if (auto it = o.find("reshard_after_forward"); it != o.end()) {
    if (it->second == "true" || it->second == "false") {
      s.reshardAfterForward = it->second == "true";
    } else {
      s.reshardAfterForward = std::stoi(it->second);  // the parser checked it (validate)
    }
  }
  const std::string pd = option(o, "param_dtype", "float32");
  if (pd != "float32") s.mpPolicy.paramDtype = parseDType(pd);
  if (auto it = o.find("reduce_dtype"); it != o.end()) s.mpPolicy.reduceDtype = parseDType(it->second);
  if (s.mpPolicy.paramDtype) s.mpPolicy.outputDtype = DType::kFloat32;
  const int replicas = std::stoi(option(o, "hsdp_replicas", "1"));
  const std::string meshDevice = deviceTypeName(ctx.device.type);  // the module's
  if (replicas > 1) {
    s.mesh = comm::initDeviceMesh(meshDevice, {replicas, ctx.worldSize / replicas},
                                  {"replicate", "shard"});
  } else {
    s.mesh = comm::DeviceMesh::fromGroups({ctx.group}, meshDevice);
  }
  return s;
}

class FsdpEngine : public TrainingEngine {
 public:
  explicit FsdpEngine(const EngineContext& ctx) : module_(ctx.module), group_(ctx.group) {
    const auto& o = ctx.training->engineOptions;
    fsdp::FullyShardOptions s = shardOptions(ctx);
    const std::string wrap = option(o, "wrap", "block");
    if (wrap != "block" && wrap != "root") {
      throw ValueError(fmt::format("engine option wrap = \"{}\": use \"block\" or \"root\"", wrap));
    }
    const bool rootOnly = wrap == "root" ||
                          std::stoi(option(o, "root_only_rank", "-1")) == ctx.rank;
    if (!rootOnly) wrapBlocks(module_, blockTypes(*ctx.training), s);
    root_ = fsdp::fullyShard(module_, s);
    if (auto it = o.find("prefetch"); it != o.end() && it->second != "true") {
      root_->setImplicitPrefetch(false, false);
    }
  }
  nn::TensorList forward(const Tensor& input) override { return module_->call({input}); }
  void setGradSync(bool enabled) override { root_->setRequiresGradientSync(enabled); }
  std::vector<Tensor> parameters() override { return module_->parameters(); }
  join::Joinable* joinable() override {
    if (!joinable_) joinable_ = std::make_unique<fsdp::FSDPJoinable>(*root_, nullptr, group_);
    return joinable_.get();
  }
  void setJoinOptimizer(optim::Optimizer* optimizer) override {
    static_cast<fsdp::FSDPJoinable*>(joinable())->setOptimizer(optimizer);
  }
  std::vector<Tensor> checksumParameters() override {
    nn::StateDict full = fsdp::fullStateDict(*root_, comm::getRank());  // collective
    std::vector<Tensor> out;
    for (const auto& [fqn, t] : module_->namedParameters()) out.push_back(full.at(fqn));
    return out;
  }
  // Full parameters and gradients, gathered (Shard(0) -> Replicate).
  std::vector<Tensor> referenceParameters() override {
    std::vector<Tensor> out;
    fsdp::ShardedStateDict sd = fsdp::shardedStateDict(*root_);
    for (const auto& [fqn, p] : module_->namedParameters()) {
      for (const auto& [key, d] : sd) {
        if (key != fqn) continue;
        Tensor full = d.fullTensor();
        const Tensor& g = p.grad();
        Tensor localGrad = g.defined() ? g : zerosLike(p.detach());
        full.setGrad(dtensor::DTensor::fromLocal(localGrad, d.mesh(), d.placements(), d.shape())
                         .fullTensor());
        out.push_back(full);
      }
    }
    return out;
  }

 private:
  std::shared_ptr<nn::Module> module_;
  comm::ProcessGroupPtr group_;
  fsdp::FSDPModulePtr root_;
  std::unique_ptr<fsdp::FSDPJoinable> joinable_;
};

// The options that depend on the world: hsdp_replicas divides it, an integer
// reshard_after_forward divides the shard world (fully_shard's rule).
std::optional<std::string> validateFsdpOptions(const TrainingWorkload& tr, int worldSize) {
  const auto& o = tr.engineOptions;
  const int replicas = std::stoi(option(o, "hsdp_replicas", "1"));
  if (worldSize % replicas != 0) {
    return fmt::format("engine option hsdp_replicas = {} does not divide world_size {}; use a "
                       "divisor of {}", replicas, worldSize, worldSize);
  }
  const std::string reshard = option(o, "reshard_after_forward", "true");
  if (reshard == "true" || reshard == "false") return std::nullopt;
  const int shardWorld = worldSize / replicas;
  const int n = std::stoi(reshard);
  if (shardWorld % n != 0) {
    return fmt::format("engine option reshard_after_forward = {} does not divide the shard "
                       "world {} (world_size {} / hsdp_replicas {}); use true, false or a "
                       "divisor of {}", n, shardWorld, worldSize, replicas, shardWorld);
  }
  return std::nullopt;
}

}  // namespace

void registerFsdpEngine() {
  EngineInfo info;
  info.name = "fsdp";
  info.options = {{"wrap", OptionType::kString},
                  {"reshard_after_forward", OptionType::kBoolOrInt},
                  {"param_dtype", OptionType::kString},
                  {"reduce_dtype", OptionType::kString},
                  {"hsdp_replicas", OptionType::kInt},
                  {"root_only_rank", OptionType::kInt},
                  {"prefetch", OptionType::kBool}};
  info.optionRanges = {{"hsdp_replicas", {1, 1 << 16}}, {"root_only_rank", {-1, 1 << 16}},
                       {"reshard_after_forward", {1, 1 << 16}}};
  info.validate = validateFsdpOptions;
  info.commHooks = {"none"};
  info.distributed = true;
  info.joinable = true;
  info.factory = [](const EngineContext& ctx) { return std::make_unique<FsdpEngine>(ctx); };
  registerEngine(std::move(info));
}

}  // namespace distlab::emulator
