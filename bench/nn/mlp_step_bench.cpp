// Training-step time of the reference MLP (4 x [Linear(1024,1024), ReLU],
// Linear(1024,10)), batch 32, cross-entropy, SGD lr 0.01, one BLAS thread,
// side by side with PyTorch in the same run.
//
//   OPENBLAS_NUM_THREADS=1 mlp_step_bench [--rounds=N] [--report=reports/mlp_step]
//       [--torch_script=PATH] [--torch_cpu_script=PATH] [google-benchmark flags]
// Runs the Google Benchmark case, then `rounds` alternating measurements (3
// warm-up + 20 timed steps each, the anchor's protocol) of distlab and of
// PyTorch: the anchor script given by --torch_script (run as
// `python3 SCRIPT 1`, it prints "local step_ms=", wall clock; the repository
// ships none, so by default there is none and no ratio) and
// bench/nn/torch_mlp_step.py (same step, process CPU time, which stays
// meaningful when other jobs load the machine). Prints the medians and the
// ratios; with --report writes <report>.json / .md. Reports, never gates.
#include <benchmark/benchmark.h>

#include "bench/common/bench_args.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "runtime/autograd/engine.hpp"
#include "runtime/nn/loss.hpp"
#include "runtime/nn/models/mlp.hpp"
#include "runtime/optim/sgd.hpp"
#include "runtime/tensor/blas_info.hpp"

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

struct StepTime {
  double wallMs = 0.0;
  double cpuMs = 0.0;
};

double processCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// Mean step time over 20 steps after 3 warm-up steps (the anchor's protocol).
StepTime distlabStep() {
  Workload w;
  for (int i = 0; i < 3; ++i) w.step();
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = processCpuMs();
  for (int i = 0; i < 20; ++i) w.step();
  const double wall =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return {wall / 20.0, (processCpuMs() - c0) / 20.0};
}

// Runs `cmd` and returns the value after `key` on the first line that has it.
std::optional<double> scrape(const std::string& cmd, const std::string& key) {
  FILE* pipe = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::optional<double> result;
  char line[512];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    const char* at = std::strstr(line, key.c_str());
    if (at != nullptr && !result) result = std::strtod(at + key.size(), nullptr);
  }
  pclose(pipe);
  return result;
}

double medianOf(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string loadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "0" : one;
}

struct Series {
  std::string name;
  std::vector<double> values;
  double median() const { return medianOf(values); }
};

void jsonArray(std::ofstream& out, const std::vector<double>& v) {
  out << "[";
  for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  out << "]";
}

void writeReport(const std::string& base,
                 const std::vector<Series>& series,
                 double ratioWall,
                 double ratioCpu,
                 const std::string& command) {
  const char* threads = std::getenv("OPENBLAS_NUM_THREADS");
  const std::string load = loadAverage();
  std::ofstream json(base + ".json");
  json << "{\n  \"benchmark\": \"mlp_step\",\n  \"model\": \"4x[Linear(1024,1024),ReLU],"
       << "Linear(1024,10)\",\n  \"batch\": 32,\n  \"loss\": \"cross_entropy\",\n"
       << "  \"optimizer\": \"SGD lr=0.01\",\n  \"blas\": \"" << blasSummary()
       << "\",\n  \"openblas_num_threads\": \""
       << (threads ? threads : "unset") << "\",\n  \"load_average_1min\": " << load << ",\n";
  for (const Series& s : series) {
    json << "  \"" << s.name << "_median_ms\": " << s.median() << ",\n  \"" << s.name
         << "_rounds_ms\": ";
    jsonArray(json, s.values);
    json << ",\n";
  }
  json << "  \"ratio_wall_distlab_over_torch_anchor\": " << ratioWall
       << ",\n  \"ratio_cpu_distlab_over_torch\": " << ratioCpu << ",\n  \"command\": \"" << command
       << "\"\n}\n";
  std::ofstream md(base + ".md");
  md << "# MLP training step: distlab vs PyTorch\n\n"
     << "Reference MLP 4 x [Linear(1024,1024), ReLU], Linear(1024,10); batch 32; cross-entropy;"
     << " SGD lr 0.01; one BLAS thread. Each round: mean of 20 steps after 3 warm-up steps;"
     << " rounds alternate distlab / PyTorch; medians below (1-min load average " << load
     << " at the end of the run).\n\n" << blasSummary()  // Note [OpenBLAS kernel family]
     << "\n\n| series | median step (ms) |\n|---|---|\n";
  for (const Series& s : series) md << "| " << s.name << " | " << s.median() << " |\n";
  md << "\nratio distlab / PyTorch (wall, anchor script) = " << ratioWall
     << "\n\nratio distlab / PyTorch (process CPU time) = " << ratioCpu << "\n\nCommand: `"
     << command << "`\n";
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  std::string report;
  std::string anchor;  // none: the repository ships no anchor script
  std::string cpuScript = "bench/nn/torch_mlp_step.py";
  CLI::App app{"MLP training step: distlab against PyTorch (reports, never gates)",
               "mlp_step_bench"};
  app.add_option("--rounds", rounds, "rounds of the side-by-side timing")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--report", report, "write <report>.json and <report>.md");
  CLI::Option* anchorFlag = distlab::cli::allowEmptyValue(
      app.add_option("--torch_script", anchor, "PyTorch anchor script ('' skips its rows)")
          ->capture_default_str());
  CLI::Option* cpuFlag = distlab::cli::allowEmptyValue(
      app.add_option("--torch_cpu_script", cpuScript, "PyTorch CPU-time script ('' skips it)")
          ->capture_default_str());
  distlab::bench::parseBenchArgs(app, argc, argv, {.googleBenchmark = true});
  // Scripts named on the command line must exist; the defaults are optional.
  if (anchorFlag->count() > 0 && !anchor.empty()) {
    distlab::bench::requireReadable(app, "--torch_script", anchor);
  }
  if (cpuFlag->count() > 0 && !cpuScript.empty()) {
    distlab::bench::requireReadable(app, "--torch_cpu_script", cpuScript);
  }
  if (!report.empty()) {
    distlab::bench::requireWritable(app, "--report", report + ".json");
    distlab::bench::requireWritable(app, "--report", report + ".md");
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  Series oursWall{"distlab_wall", {}}, oursCpu{"distlab_cpu", {}};
  Series anchorWall{"torch_anchor_wall", {}}, torchCpu{"torch_cpu", {}};
  for (int r = 0; r < rounds; ++r) {
    StepTime t = distlabStep();
    oursWall.values.push_back(t.wallMs);
    oursCpu.values.push_back(t.cpuMs);
    auto v = anchor.empty() ? std::nullopt
                            : scrape("/usr/bin/python3 " + anchor + " 1", "local step_ms=");
    if (v) anchorWall.values.push_back(*v);
    v = cpuScript.empty() ? std::nullopt : scrape("/usr/bin/python3 " + cpuScript, "cpu_ms=");
    if (v) torchCpu.values.push_back(*v);
  }
  std::printf("distlab wall_ms=%.2f cpu_ms=%.2f (median of %d rounds)\n", oursWall.median(),
              oursCpu.median(), rounds);
  if (anchorWall.values.empty() || torchCpu.values.empty()) {
    std::printf("PyTorch unavailable (--torch_script '%s', --torch_cpu_script '%s'); no ratio\n",
                anchor.c_str(), cpuScript.c_str());
    return 0;
  }
  const double ratioWall = oursWall.median() / anchorWall.median();
  const double ratioCpu = oursCpu.median() / torchCpu.median();
  std::printf(
      "torch   wall_ms=%.2f (anchor) cpu_ms=%.2f\nratio distlab/torch wall=%.3f "
      "cpu=%.3f\n",
      anchorWall.median(), torchCpu.median(), ratioWall, ratioCpu);
  if (!report.empty()) {
    const char* core = std::getenv("OPENBLAS_CORETYPE");
    const std::string command =
        (core ? "OPENBLAS_CORETYPE=" + std::string(core) + " " : std::string()) +
        "OPENBLAS_NUM_THREADS=1 build/default/bench/nn/mlp_step_bench --rounds=" +
        std::to_string(rounds) + " --report=" + report;
    writeReport(report, {oursWall, anchorWall, oursCpu, torchCpu}, ratioWall, ratioCpu, command);
  }
  return 0;
}
