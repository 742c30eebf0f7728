// The consumer project's own training program, written as a user would
// without distlab's scenario machinery in mind: its own model, data and loop
// on distlab's runtime (env:// init, DistributedSampler, DDP or FSDP, SGD, send/recv). Linking
// distlab::program is its only concession; its calls into distlab::program
// (the reported probe loss; step markers in the pipeline, which has no DDP
// forward to count steps by) are optional and do nothing outside a scenario.
// Its scenarios (scenarios/) run through distlab_add_scenario_tests(), from
// the installed package (install_consumer) and in distlab's own tree
// (tests/program/, label `program`).
//
//   trainer [--mode ddp|fsdp|pipeline] [--epochs N] [--join] [--find-unused] [--steps N] [--no-init]
//           [--exit-early-rank R] [--print-mb N] [--leave-child]
//
// ddp / fsdp: DistributedDataParallel or fully_shard (each Linear, then the
// root) over 96 samples, batches of 4 from the rank's DistributedSampler
// share, --epochs passes (12 steps per epoch on 2 ranks), inside join::Join
// with --join (ddp), DDP with find_unused_parameters with --find-unused. pipeline (2 ranks): rank 0 sends --steps
// activations to rank 1.
//
// The last four misbehave on purpose, for distlab's own tests (the runner
// must diagnose them, bound the run and leave nothing behind): never create a
// process group; exit 0 on rank R right after initialization; print N MiB of
// output; fork a child that outlives the program.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "emulator/program/program.hpp"
#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/data/distributed_sampler.hpp"
#include "runtime/ddp/distributed_data_parallel.hpp"
#include "runtime/fsdp/fully_shard.hpp"
#include "runtime/join/join.hpp"
#include "runtime/nn/containers.hpp"
#include "runtime/nn/layers.hpp"
#include "runtime/optim/sgd.hpp"
#include "runtime/tensor/tensor.hpp"

using namespace distlab;

namespace {

struct Args {
  std::string mode = "ddp";
  int epochs = 1;   // ddp: passes over the rank's share of the data
  bool join = false;  // ddp: the loop runs inside join::Join (uneven inputs)
  bool findUnused = false;  // ddp: find_unused_parameters = true
  int steps = 4;    // pipeline: messages sent
  bool noInit = false;
  int exitEarlyRank = -1;
  int printMb = 0;
  bool leaveChild = false;
};

int parseCount(const std::string& flag, const char* text, int max) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 0 || v > max) {
    throw std::invalid_argument(flag + " needs an integer in [0, " + std::to_string(max) +
                                "], got '" + text + "'");
  }
  return static_cast<int>(v);
}

Args parseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--mode") {
      a.mode = value();
      if (a.mode != "ddp" && a.mode != "fsdp" && a.mode != "pipeline") {
        throw std::invalid_argument("--mode must be ddp, fsdp or pipeline, got '" + a.mode + "'");
      }
    } else if (flag == "--steps") {
      a.steps = parseCount(flag, value(), 10000);
    } else if (flag == "--epochs") {
      a.epochs = parseCount(flag, value(), 10000);
    } else if (flag == "--join") {
      a.join = true;
    } else if (flag == "--find-unused") {
      a.findUnused = true;
    } else if (flag == "--no-init") {
      a.noInit = true;
    } else if (flag == "--exit-early-rank") {
      a.exitEarlyRank = parseCount(flag, value(), 1 << 20);
    } else if (flag == "--print-mb") {
      a.printMb = parseCount(flag, value(), 1024);
    } else if (flag == "--leave-child") {
      a.leaveChild = true;
    } else {
      throw std::invalid_argument("unknown flag '" + flag + "'");
    }
  }
  if (a.join && a.mode != "ddp") throw std::invalid_argument("--join needs --mode ddp");
  if (a.findUnused && a.mode != "ddp") {
    throw std::invalid_argument("--find-unused needs --mode ddp");
  }
  return a;
}

// The dataset: 96 samples of 4 features, target the sum of the features.
struct Dataset {
  static constexpr int64_t kSize = 96;
  Tensor x, y;
  Dataset() {
    Generator gen(1000);
    x = randn({kSize, 4}, gen);
    y = ops::sum(x, {1}, /*keepdim=*/true);
  }
  std::pair<Tensor, Tensor> batch(const std::vector<int64_t>& indices) const {
    Tensor index = fromVector(indices, {static_cast<int64_t>(indices.size())});
    return {x.indexSelect(0, index), y.indexSelect(0, index)};
  }
};

// Data parallel training, the model replicated by DDP or sharded by FSDP.
void trainDataParallel(const Args& a, const comm::ProcessGroupPtr& world) {
  Generator init(42);  // the same initial model on every rank (DDP also broadcasts it)
  auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(4, 16, init), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(16, 1, init)});
  std::optional<ddp::DistributedDataParallel> ddpModel;
  std::function<Tensor(const Tensor&)> forward;
  if (a.mode == "ddp") {
    ddp::DDPOptions options;
    options.findUnusedParameters = a.findUnused;
    ddpModel.emplace(model, world, options);
    forward = [&](const Tensor& x) { return ddpModel->forward(x); };
  } else {  // each Linear its own group, bottom-up, then the root
    fsdp::fullyShard((*model)[0]);
    fsdp::fullyShard((*model)[2]);
    fsdp::fullyShard(model);
    forward = [&](const Tensor& x) { return model->forward(x); };
  }
  optim::SgdOptions so;
  so.lr = 0.05;
  optim::SGD sgd(model->parameters(), so);  // FSDP: after sharding, the local shards
  const Dataset data;
  data::DistributedSampler sampler(Dataset::kSize);  // this rank's share, from the world
  constexpr size_t kBatch = 4;
  auto [probeX, probeY] = data.batch({0, 1, 2, 3, 4, 5, 6, 7});  // the same batch everywhere
  // Uneven inputs: a rank that runs out of batches first shadows the others'
  // collectives inside Join instead of leaving them waiting.
  std::optional<join::Join> join;
  if (a.join) join.emplace(std::vector<join::Joinable*>{&*ddpModel});
  for (int epoch = 0; epoch < a.epochs; ++epoch) {
    sampler.setEpoch(epoch);  // a new order each epoch
    const std::vector<int64_t> order = sampler.indices();
    for (size_t next = 0; next + kBatch <= order.size(); next += kBatch) {
      // No step marker: each DDP (or root FSDP) forward begins a step for
      // `at_step` faults.
      auto [x, y] = data.batch({order.begin() + static_cast<std::ptrdiff_t>(next),
                                order.begin() + static_cast<std::ptrdiff_t>(next + kBatch)});
      sgd.zeroGrad();
      Tensor loss = ops::mseLoss(forward(x), y);
      autograd::backward(loss);
      sgd.step();
      // The loss on the same batch every step: it falls when training works
      // (FSDP gathers its shards for it, on every rank alike).
      autograd::NoGradGuard noGrad;
      program::report("probe_loss", ops::mseLoss(model->forward(probeX), probeY).item<double>());
    }
  }
  if (join) join->exit();
}

// Two stages: rank 0 sends its activations to rank 1, which reduces them.
void runPipeline(const Args& a, const comm::ProcessGroupPtr& world) {
  if (world->size() != 2) throw std::invalid_argument("--mode pipeline needs world size 2");
  for (int step = 0; step < a.steps; ++step) {
    program::step(step);
    Tensor activations = full({64}, Scalar(static_cast<double>(step + 1)));
    if (world->rank() == 0) {
      world->send(activations, 1);
    } else {
      world->recv(activations, 0);
      program::report("received_sum", ops::sum(activations).item<double>());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  try {
    a = parseArgs(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "trainer: %s\n", e.what());
    return 2;
  }
  if (a.leaveChild && ::fork() == 0) {
    ::pause();  // outlives the program unless someone cleans up its process group
    ::_exit(0);
  }
  for (int i = 0; i < a.printMb; ++i) {
    std::string line(1023, 'x');
    for (int k = 0; k < 1024; ++k) std::puts(line.c_str());
  }
  if (a.noInit) return 0;
  comm::InitOptions io;  // env:// with torchrun's variables
  io.backend = "shm";
  auto world = comm::initProcessGroup(io);
  if (world->rank() == a.exitEarlyRank) return 0;  // leaves without a word to its peers
  if (a.mode == "pipeline") {
    runPipeline(a, world);
  } else {
    trainDataParallel(a, world);
  }
  comm::destroyProcessGroup();
  return 0;
}
