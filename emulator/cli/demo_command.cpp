// `distlab demo`: a short single-process training run of the MLP on synthetic
// seeded data (a fixed batch labelled by a random linear teacher), printing the
// loss per step and the overall loss reduction.
#include <cstdio>
#include <string>

#include "emulator/cli/command_registry.hpp"
#include "emulator/cli/usage_checks.hpp"
#include "runtime/autograd/engine.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/nn/loss.hpp"
#include "runtime/nn/models/mlp.hpp"
#include "runtime/optim/sgd.hpp"
#include "runtime/tensor/blas_info.hpp"

namespace distlab::cli {
namespace {

struct DemoFlags {
  int64_t steps = 20;
  int64_t batch = 64;
  int64_t hidden = 256;
  uint64_t seed = 0;
  double lr = 0.1;
};

constexpr int64_t kInputDim = 32;
constexpr int64_t kClasses = 10;

int runDemo(const DemoFlags& f) {
  Generator gen(f.seed);
  nn::Mlp model({kInputDim, f.hidden, 2, kClasses}, gen);
  Tensor x = randn({f.batch, kInputDim}, gen);
  Tensor y = x.matmul(randn({kInputDim, kClasses}, gen)).argmax(1);
  optim::SGD opt(model.parameters(), {.lr = f.lr, .momentum = 0.9});
  std::printf("%s\n", blasSummary().c_str());  // Note [OpenBLAS kernel family]
  std::printf(
      "demo: MLP %lld-%lld-%lld-%lld (%zu parameter tensors), batch %lld, SGD lr %g "
      "momentum 0.9, seed %llu\n",
      static_cast<long long>(kInputDim), static_cast<long long>(f.hidden),
      static_cast<long long>(f.hidden), static_cast<long long>(kClasses), model.parameters().size(),
      static_cast<long long>(f.batch), f.lr, static_cast<unsigned long long>(f.seed));
  double first = 0.0, last = 0.0;
  Stopwatch watch;
  for (int64_t step = 1; step <= f.steps; ++step) {
    opt.zeroGrad();
    Tensor loss = nn::crossEntropyLoss(model.forward(x), y);
    autograd::backward(loss);
    opt.step();
    last = loss.item<double>();
    if (step == 1) first = last;
    std::printf("step %4lld  loss %.6f\n", static_cast<long long>(step), last);
  }
  const double reduction = first > 0.0 ? 100.0 * (first - last) / first : 0.0;
  std::printf("loss %.6f -> %.6f: reduced by %.1f%% over %lld steps (%.1f ms/step)\n", first, last,
              reduction, static_cast<long long>(f.steps),
              watch.elapsedSeconds() * 1e3 / static_cast<double>(f.steps));
  return 0;
}

const CommandRegistrar kDemo{Command{
    "demo", "Train a small MLP on synthetic data in one process and print the loss per step",
    [](CLI::App& sub) -> std::function<int()> {
      auto flags = std::make_shared<DemoFlags>();
      sub.add_option("--steps", flags->steps, "training steps")
          ->check(CLI::Range(int64_t{1}, int64_t{100000}))
          ->capture_default_str();
      sub.add_option("--batch", flags->batch, "batch size")
          ->check(CLI::Range(int64_t{1}, int64_t{65536}))
          ->capture_default_str();
      sub.add_option("--hidden", flags->hidden, "hidden width of the MLP")
          ->check(CLI::Range(int64_t{1}, int64_t{16384}))
          ->capture_default_str();
      sub.add_option("--seed", flags->seed, "seed of the model init and the data")
          ->check(unsignedNumber())
          ->capture_default_str();
      sub.add_option("--lr", flags->lr, "SGD learning rate")
          ->check(CLI::Range(0.0, 10.0))
          ->capture_default_str();
      return [flags] { return runDemo(*flags); };
    }}};

}  // namespace
}  // namespace distlab::cli
