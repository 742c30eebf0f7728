// Uses the installed headers and libraries the way an outside project would:
// every component once (core, tensor, autograd, nn, optim, comm, ddp,
// emulator), with two ranks started as processes by the public rank spawner.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "distlab/config.hpp"
#include "emulator/launcher/rank_spawner.hpp"
#include "emulator/scenario/scenario_parser.hpp"
#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/ddp/distributed_data_parallel.hpp"
#include "runtime/nn/layers.hpp"
#include "runtime/optim/sgd.hpp"
#include "runtime/tensor/tensor.hpp"

using namespace distlab;

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("consumer check failed: " + what);
}

// core: the check macros throw distlab::Error.
void useCore() {
  bool threw = false;
  try {
    DL_CHECK_EQ(1, 2, "expected failure");
  } catch (const Error&) {
    threw = true;
  }
  require(threw, "DL_CHECK_EQ throws");
}

// tensor + autograd + nn + optim: one SGD step on a Linear layer.
void useLocalTraining() {
  Generator gen(7);
  auto layer = std::make_shared<nn::Linear>(4, 2, gen);
  Tensor before = layer->parameters().at(0).clone();
  Tensor loss = ops::sum(layer->forward(ones({3, 4})));
  autograd::backward(loss);
  optim::SgdOptions o;
  o.lr = 0.1;
  optim::SGD sgd(layer->parameters(), o);
  sgd.step();
  // d(sum(x W^T + b))/dW = 3 for every weight (three rows of ones).
  Tensor moved = ops::sub(before, layer->parameters().at(0));
  require(ops::sum(moved).item<double>() > 0.3 * 8 - 1e-5 &&
              ops::sum(moved).item<double>() < 0.3 * 8 + 1e-5,
          "SGD moved every weight by lr * 3");
}

// comm + ddp + emulator (rank spawner): allreduce and one DDP backward on
// two processes over shared memory.
void useDistributed() {
  ranks::spawnRanks(ranks::SpawnMode::kProcesses, 2, [](ranks::RankContext& ctx) {
    comm::ProcessGroupConfig config;
    config.store = ctx.store;
    config.rank = ctx.rank;
    config.size = ctx.worldSize;
    config.backendSpec = "shm";
    config.timeout = std::chrono::seconds(20);
    auto pg = comm::createProcessGroup(config);
    Tensor t = full({4}, Scalar(static_cast<double>(ctx.rank + 1)));
    pg->allreduce(t)->wait();
    require(t.toVector<float>().at(0) == 3.0f, "allreduce sums 1 + 2");
    Generator gen(11);
    ddp::DistributedDataParallel model(std::make_shared<nn::Linear>(4, 2, gen), pg);
    Tensor x = full({2, 4}, Scalar(static_cast<double>(ctx.rank)));
    autograd::backward(ops::sum(model.forward(x)));
    // Mean over ranks of d/dW = 2 * x: (0 + 2) / 2 = 1 for every weight.
    Tensor g = model.parameters().at(0).grad();
    require(g.toVector<float>().at(0) == 1.0f, "DDP averages the weight gradient");
  }, ranks::SpawnOptions{.timeout = std::chrono::seconds(60)});
}

// emulator: the scenario parser validates a file and points at the line.
void useScenarioParser() {
  try {
    emulator::parseScenarioText(
        "name = \"x\"\ndescription = \"d\"\ngroup = \"g\"\n[cluster]\nworld_size = -1\n",
        "inline.toml");
  } catch (const Error& e) {
    require(std::string(e.what()).find("inline.toml:5") != std::string::npos,
            std::string("parser names file:line, got: ") + e.what());
    return;
  }
  require(false, "the parser rejects world_size = -1");
}

}  // namespace

int main() {
  try {
    useCore();
    useLocalTraining();
    useDistributed();
    useScenarioParser();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::printf("distlab consumer ok (version %s)\n", DISTLAB_VERSION);
  return 0;
}
