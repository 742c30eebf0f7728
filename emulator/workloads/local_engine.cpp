// Engine "local": the module as is, no gradient synchronisation. With
// world_size > 1 every rank trains on its own data (a baseline for DDP).
#include "emulator/workloads/engine_registry.hpp"
#include "emulator/workloads/training_engine.hpp"

namespace distlab::emulator {

namespace {

class LocalEngine : public TrainingEngine {
 public:
  explicit LocalEngine(std::shared_ptr<nn::Module> module) : module_(std::move(module)) {}
  nn::TensorList forward(const Tensor& input) override { return module_->call({input}); }
  std::vector<Tensor> parameters() override { return module_->parameters(); }

 private:
  std::shared_ptr<nn::Module> module_;
};

}  // namespace

void registerLocalEngine() {
  EngineInfo info;
  info.name = "local";
  info.distributed = false;
  info.factory = [](const EngineContext& ctx) {
    return std::make_unique<LocalEngine>(ctx.module);
  };
  registerEngine(std::move(info));
}

}  // namespace distlab::emulator
