// Training-step time of the reference MLP (4 x [Linear(1024,1024), ReLU],
// Linear(1024,10)), batch 32, cross-entropy, SGD lr 0.01, one BLAS thread,
// side by side with PyTorch's figure for the same step
// (/work/shared/anchors/torch_ddp_mlp.py prints "local step_ms=...").
//
//   OPENBLAS_NUM_THREADS=1 mlp_step_bench [--rounds=N] [--report=reports/mlp_step]
//       [--torch_script=PATH] [google-benchmark flags]
// Runs the Google Benchmark case, then `rounds` alternating measurements of
// distlab (3 warm-up + 20 timed steps, as the anchor does) and the anchor, and
// prints the medians and their ratio. With --report writes <report>.json / .md.
// Reports, never gates.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "runtime/autograd/engine.hpp"
#include "runtime/nn/loss.hpp"
#include "runtime/nn/models/mlp.hpp"
#include "runtime/optim/sgd.hpp"

namespace {

using namespace distlab;

struct Workload {
  Generator gen{0};
  nn::Mlp model{nn::MlpOptions{1024, 1024, 4, 10}, gen};
  Tensor x = randn({32, 1024}, gen);
  Tensor y = randint(0, 10, {32}, gen);
  optim::SGD opt{model.parameters(), optim::SgdOptions{.lr = 0.01}};

  void step() {
    opt.zeroGrad();
    autograd::backward(nn::crossEntropyLoss(model.forward(x), y));
    opt.step();
  }
};

void BM_MlpTrainStep(benchmark::State& state) {
  Workload w;
  for (int i = 0; i < 3; ++i) w.step();
  for (auto _ : state) w.step();
  state.SetLabel("4x1024 MLP, batch 32, CE, SGD");
}
BENCHMARK(BM_MlpTrainStep)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Mean step time over 20 steps after 3 warm-up steps (the anchor's protocol).
double distlabStepMs() {
  Workload w;
  for (int i = 0; i < 3; ++i) w.step();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) w.step();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
         20.0;
}

std::optional<double> torchStepMs(const std::string& script) {
  const std::string cmd = "/usr/bin/python3 " + script + " 1 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::optional<double> result;
  char line[512];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    double ms = 0.0;
    if (std::sscanf(line, "local step_ms=%lf", &ms) == 1) result = ms;
  }
  pclose(pipe);
  return result;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string flagValue(int& argc, char** argv, const std::string& name, std::string fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind(prefix, 0) == 0) {
      std::string value = std::string(argv[i]).substr(prefix.size());
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      return value;
    }
  }
  return fallback;
}

void writeReport(const std::string& base, const std::vector<double>& ours,
                 const std::vector<double>& torch, double oursMed, double torchMed) {
  const char* threads = std::getenv("OPENBLAS_NUM_THREADS");
  const std::string cmd =
      "OPENBLAS_NUM_THREADS=1 build/<dir>/bench/nn/mlp_step_bench --report=" + base;
  std::ofstream json(base + ".json");
  json << "{\n  \"benchmark\": \"mlp_step\",\n  \"model\": \"4x[Linear(1024,1024),ReLU],"
       << "Linear(1024,10)\",\n  \"batch\": 32,\n  \"loss\": \"cross_entropy\",\n"
       << "  \"optimizer\": \"SGD lr=0.01\",\n  \"openblas_num_threads\": \""
       << (threads ? threads : "unset") << "\",\n  \"distlab_step_ms\": " << oursMed
       << ",\n  \"torch_step_ms\": " << torchMed << ",\n  \"ratio_distlab_over_torch\": "
       << oursMed / torchMed << ",\n  \"distlab_rounds_ms\": [";
  for (size_t i = 0; i < ours.size(); ++i) json << (i ? ", " : "") << ours[i];
  json << "],\n  \"torch_rounds_ms\": [";
  for (size_t i = 0; i < torch.size(); ++i) json << (i ? ", " : "") << torch[i];
  json << "],\n  \"command\": \"" << cmd << "\"\n}\n";
  std::ofstream md(base + ".md");
  md << "# MLP training step: distlab vs PyTorch\n\n"
     << "Reference MLP 4 x [Linear(1024,1024), ReLU], Linear(1024,10); batch 32; cross-entropy;"
     << " SGD lr 0.01; one BLAS thread; mean of 20 steps after 3 warm-up steps, median of "
     << ours.size() << " alternating rounds.\n\n"
     << "| engine | step (ms) |\n|---|---|\n"
     << "| distlab | " << oursMed << " |\n| PyTorch (torch_ddp_mlp.py, local) | " << torchMed
     << " |\n\nratio distlab / PyTorch = " << oursMed / torchMed << "\n\nCommand: `" << cmd
     << "`\n";
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = std::stoi(flagValue(argc, argv, "rounds", "5"));
  const std::string report = flagValue(argc, argv, "report", "");
  const std::string script =
      flagValue(argc, argv, "torch_script", "/work/shared/anchors/torch_ddp_mlp.py");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  std::vector<double> ours, torch;
  for (int r = 0; r < rounds; ++r) {
    ours.push_back(distlabStepMs());
    if (auto t = torchStepMs(script)) torch.push_back(*t);
  }
  const double oursMed = median(ours);
  std::printf("distlab step_ms=%.2f (median of %d rounds)\n", oursMed, rounds);
  if (torch.empty()) {
    std::printf("PyTorch anchor unavailable (%s); no ratio\n", script.c_str());
    return 0;
  }
  const double torchMed = median(torch);
  std::printf("torch   step_ms=%.2f (median of %zu rounds)\nratio distlab/torch=%.3f\n",
              torchMed, torch.size(), oursMed / torchMed);
  if (!report.empty()) writeReport(report, ours, torch, oursMed, torchMed);
  return 0;
}
