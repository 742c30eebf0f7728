// DDP training-step time of the reference MLP (4 x [Linear(1024,1024), ReLU],
// Linear(1024,10)), batch 32 per rank, cross-entropy, SGD lr 0.01, ranks as
// processes on the shm backend, one BLAS thread per rank; against the same
// model trained locally with the same per-rank batch, and PyTorch's DDP (gloo)
// side by side through a PyTorch DDP script (--torch_script, by default
// bench/ddp/torch_ddp_step.py from the repository root; run as
// `/usr/bin/python3 SCRIPT WORLD`, it prints "local step_ms=" and
// "ddp ... step_ms=" lines; without PyTorch, or from another directory, the
// PyTorch rows are left out).
//
//   OPENBLAS_NUM_THREADS=1 ddp_step_bench [--worlds=2,4] [--caps=1,5,10,25,50]
//       [--rounds=3] [--report=reports/ddp_step] [--torch_script=PATH]
//
// Configurations per world: DDP's defaults, gradient_as_bucket_view, the noop
// hook (no communication), DDP inside a Join over even inputs (what the vote
// costs a step) and DDP with ZeRO sharding the SGD step; the bucket_cap_mb
// sweep runs at world 2. FSDP on the same model: bench/fsdp/fsdp_step_bench
// --width=1024 --depth=4.
//
// Per configuration: fork `world` ranks (FileStore rendezvous in a temp dir),
// 3 warm-up + 20 timed steps (the anchor's protocol); rank 0 reports the mean
// step time and DDP's statistics of the last step (backward compute, comm,
// overlap, per-bucket ready/launched/completed). The median over rounds is
// reported. Reports, never gates.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/common/bench_args.hpp"
#include "emulator/launcher/exit_guard.hpp"
#include "runtime/autograd/engine.hpp"
#include "runtime/comm/store/file_store.hpp"
#include "runtime/ddp/comm_hooks/default_hooks.hpp"
#include "runtime/ddp/distributed_data_parallel.hpp"
#include "runtime/nn/loss.hpp"
#include "runtime/nn/models/mlp.hpp"
#include "runtime/optim/sgd.hpp"
#include "runtime/join/join.hpp"
#include "runtime/optim/optimizer_factory.hpp"
#include "runtime/tensor/blas_info.hpp"
#include "runtime/zero/zero_redundancy_optimizer.hpp"

namespace {

using namespace distlab;

constexpr int kWarmup = 3;
constexpr int kSteps = 20;

// What wraps the DDP step: nothing, a Join over even inputs (its cost is the
// per-iteration vote, an allreduce of one element), or ZeRO sharding the SGD
// step (a broadcast per rank after the local step).
enum class Wrapper { kNone, kJoin, kZero };

struct Config {
  std::string name;
  int world = 2;
  ddp::DDPOptions options;
  bool noopHook = false;
  Wrapper wrapper = Wrapper::kNone;
};

struct Result {
  double stepMs = 0;
  double bwdComputeMs = 0, bwdCommMs = 0, overlapMs = 0, fwdMs = 0;
  int buckets = 0;
  std::string bucketTimeline;  // "bytes:ready->launched->completed(ms from bwd start)"
};

double localStepMs() {
  Generator gen(0);
  nn::Mlp model(nn::MlpOptions{1024, 1024, 4, 10}, gen);
  Tensor x = randn({32, 1024}, gen);
  Tensor y = randint(0, 10, {32}, gen);
  optim::SgdOptions so;
  so.lr = 0.01;
  optim::SGD opt(model.parameters(), so);
  std::chrono::steady_clock::time_point t0;
  for (int i = 0; i < kWarmup + kSteps; ++i) {
    if (i == kWarmup) t0 = std::chrono::steady_clock::now();
    opt.zeroGrad();
    autograd::backward(nn::crossEntropyLoss(model.forward(x), y));
    opt.step();
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
         kSteps;
}

Result rankMain(const Config& c, int rank, const std::string& dir) {
  auto store = std::make_shared<comm::FileStore>(dir + "/store", c.world);
  comm::ProcessGroupConfig pc;
  pc.store = store;
  pc.rank = rank;
  pc.size = c.world;
  pc.name = "bench";
  pc.timeout = std::chrono::seconds(120);
  pc.backendSpec = "shm";
  auto group = comm::createProcessGroup(pc);
  Generator gen(0);
  auto model = std::make_shared<nn::Mlp>(nn::MlpOptions{1024, 1024, 4, 10}, gen);
  Generator data(static_cast<uint64_t>(rank));
  Tensor x = randn({32, 1024}, data);
  Tensor y = randint(0, 10, {32}, data);
  ddp::DistributedDataParallel ddp(model, group, c.options);
  if (c.noopHook) ddp.registerCommHook({}, ddp::noopHook, "noop_hook");
  optim::SgdOptions so;
  so.lr = 0.01;
  optim::SGD sgd(model->parameters(), so);
  std::unique_ptr<zero::ZeroRedundancyOptimizer> zeroOpt;
  if (c.wrapper == Wrapper::kZero) {
    zeroOpt = std::make_unique<zero::ZeroRedundancyOptimizer>(
        model->parameters(), optim::optimizerFactory("sgd"), group, zero::ZeroOptions{},
        optim::Options{{"lr", 0.01}});
  }
  std::unique_ptr<join::Join> joinScope;
  if (c.wrapper == Wrapper::kJoin) {
    joinScope = std::make_unique<join::Join>(std::vector<join::Joinable*>{&ddp});
  }
  std::chrono::steady_clock::time_point t0;
  for (int i = 0; i < kWarmup + kSteps; ++i) {
    if (i == kWarmup) t0 = std::chrono::steady_clock::now();
    if (zeroOpt) zeroOpt->zeroGrad(); else sgd.zeroGrad();
    autograd::backward(nn::crossEntropyLoss(ddp.forward(x), y));
    if (zeroOpt) zeroOpt->step(); else sgd.step();
  }
  const auto stepEnd = std::chrono::steady_clock::now();
  if (joinScope) joinScope->exit();  // every rank ran the same steps: nothing is shadowed
  Result r;
  r.stepMs =
      std::chrono::duration<double, std::milli>(stepEnd - t0).count() / kSteps;
  const auto stats = ddp.loggingData();
  const auto& t = stats.lastIteration;
  r.fwdMs = t.forwardComputeNs() / 1e6;
  r.bwdComputeMs = t.backwardComputeNs() / 1e6;
  r.bwdCommMs = t.backwardCommNs() / 1e6;
  r.overlapMs = t.overlapNs() / 1e6;
  r.buckets = static_cast<int>(stats.lastBucketTimings.size());
  std::ostringstream tl;
  for (const auto& b : stats.lastBucketTimings) {
    auto ms = [&](int64_t ns) { return (ns - t.backwardComputeStartNs) / 1e6; };
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s%.1fMB:%.2f/%.2f/%.2f", tl.tellp() > 0 ? " " : "",
                  b.bytes / 1048576.0, ms(b.readyNs), ms(b.launchedNs), ms(b.completedNs));
    tl << buf;
  }
  r.bucketTimeline = tl.str();
  group->shutdown(std::chrono::seconds(10));
  return r;
}

// The ranks form one process group and the temp folder is guarded: none of
// it outlives the bench, however it ends (emulator/launcher/exit_guard.hpp).
std::optional<Result> runConfig(const Config& c) {
  emulator::GuardedTempDir tempDir("ddp_bench_");
  const std::string dir = tempDir.path();
  std::vector<pid_t> pids;
  pid_t group = 0;
  for (int rank = 0; rank < c.world; ++rank) {
    const pid_t pid = emulator::forkGuardedRank(group);
    if (pid == 0) {
      int rc = 0;
      try {
        Result r = rankMain(c, rank, dir);
        if (rank == 0) {
          std::ofstream out(dir + "/result");
          out << r.stepMs << " " << r.fwdMs << " " << r.bwdComputeMs << " " << r.bwdCommMs << " "
              << r.overlapMs << " " << r.buckets << "\n" << r.bucketTimeline << "\n";
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
        rc = 1;
      }
      std::fflush(nullptr);
      _exit(rc);
    }
    pids.push_back(pid);
  }
  bool ok = true;
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    emulator::releaseGuardedRank(pids[i], group, i + 1 == pids.size());
  }
  std::optional<Result> result;
  std::ifstream in(dir + "/result");
  Result r;
  if (ok && in >> r.stepMs >> r.fwdMs >> r.bwdComputeMs >> r.bwdCommMs >> r.overlapMs >> r.buckets) {
    std::getline(in, r.bucketTimeline);
    std::getline(in, r.bucketTimeline);
    result = r;
  }
  return result;
}

struct TorchFigures {
  double local = 0, ddp = 0;
};

std::optional<TorchFigures> torchFigures(const std::string& script, int world) {
  if (!std::filesystem::exists(script)) return std::nullopt;
  // setpriv --pdeathsig: the script dies with the bench, however it ends.
  const std::string python = "OPENBLAS_NUM_THREADS=1 /usr/bin/python3 " + script + " " +
                             std::to_string(world) + " 2>/dev/null";
  const std::string cmd = "if command -v setpriv >/dev/null; then exec setpriv --pdeathsig KILL "
                          "env " + python + "; else exec env " + python + "; fi";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  TorchFigures f;
  char line[512];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    double ms = 0;
    if (std::sscanf(line, "local step_ms=%lf", &ms) == 1) f.local = ms;
    const char* p = std::strstr(line, "step_ms=");
    if (std::strncmp(line, "ddp ", 4) == 0 && p && std::sscanf(p, "step_ms=%lf", &ms) == 1) {
      f.ddp = ms;
    }
  }
  pclose(pipe);
  if (f.ddp <= 0) return std::nullopt;
  return f;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Row {
  Config config;
  Result result;  // medians
};

// The runs of configuration `name` at `world` (none when it did not run).
const std::vector<Result>* runsOf(const std::vector<Config>& configs,
                                  const std::vector<std::vector<Result>>& runs,
                                  const std::string& name, int world) {
  for (size_t i = 0; i < configs.size(); ++i) {
    if (configs[i].name == name && configs[i].world == world) return &runs[i];
  }
  return nullptr;
}

double medianStepMs(const std::vector<Config>& configs, const std::vector<std::vector<Result>>& runs,
                    const std::string& name, int world) {
  const std::vector<Result>* r = runsOf(configs, runs, name, world);
  std::vector<double> steps;
  if (r) {
    for (const Result& x : *r) steps.push_back(x.stepMs);
  }
  return median(steps);
}

// The median over rounds of (step of `name` - step of "default") in the same
// round: configurations run round-robin, so pairing them by round cancels the
// load drift between rounds that the difference of two medians keeps.
double medianAddedMs(const std::vector<Config>& configs,
                     const std::vector<std::vector<Result>>& runs, const std::string& name,
                     int world) {
  const std::vector<Result>* with = runsOf(configs, runs, name, world);
  const std::vector<Result>* base = runsOf(configs, runs, "default", world);
  std::vector<double> added;
  if (with && base) {
    for (size_t k = 0; k < std::min(with->size(), base->size()); ++k) {
      added.push_back((*with)[k].stepMs - (*base)[k].stepMs);
    }
  }
  return median(added);
}

// What a Join (its per-iteration vote) and ZeRO (sharded step, then a
// broadcast per rank) add to DDP's step, per world size (medianAddedMs).
void writeWrapperCosts(std::ostream& md, const std::vector<double>& worlds,
                       const std::vector<Config>& configs,
                       const std::vector<std::vector<Result>>& runs) {
  md << "\n| world | DDP default step (ms) | inside Join: added ms per step | ZeRO (SGD "
        "sharded): added ms per step |\n|---|---|---|---|\n";
  for (double w : worlds) {
    const int world = static_cast<int>(w);
    char row[256];
    std::snprintf(row, sizeof(row), "| %d | %.2f | %+.2f | %+.2f |\n", world,
                  medianStepMs(configs, runs, "default", world),
                  medianAddedMs(configs, runs, "inside Join (even inputs)", world),
                  medianAddedMs(configs, runs, "ZeRO (SGD sharded)", world));
    md << row;
  }
  md << "\nAdded ms: the median over rounds of (configuration - default) within a round; a "
        "negative figure is a cost below the run's noise.\n";
}

}  // namespace

int main(int argc, char** argv) {
  setenv("OPENBLAS_NUM_THREADS", "1", 0);
  int rounds = 3;
  std::string worldsText = "2,4", capsText = "1,5,10,25,50", report;
  std::string script = "bench/ddp/torch_ddp_step.py";  // relative to the repository root
  CLI::App app{"DDP training step against local training and PyTorch DDP (reports, never gates)",
               "ddp_step_bench"};
  app.add_option("--worlds", worldsText, "comma list of world sizes (2..64)")
      ->capture_default_str();
  cli::allowEmptyValue(
      app.add_option("--caps", capsText, "comma list of bucket_cap_mb values (empty: no sweep)")
          ->capture_default_str());
  app.add_option("--rounds", rounds, "rounds per configuration (median reported)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--report", report, "write <report>.json and <report>.md");
  CLI::Option* scriptFlag = cli::allowEmptyValue(
      app.add_option("--torch_script", script, "PyTorch DDP anchor script ('' skips its rows)")
          ->capture_default_str());
  bench::parseBenchArgs(app, argc, argv);
  // A script named on the command line must exist (its rows are left out when
  // PyTorch is missing or the script prints no figures).
  if (scriptFlag->count() > 0 && !script.empty()) {
    bench::requireReadable(app, "--torch_script", script);
  }
  const std::vector<int> worldSizes = bench::intList(app, "--worlds", worldsText, 2, 64);
  const std::vector<double> worlds(worldSizes.begin(), worldSizes.end());
  const std::vector<double> caps = bench::positiveList(app, "--caps", capsText, 1 << 20, true);
  if (!report.empty()) {
    bench::requireWritable(app, "--report", report + ".json");
    bench::requireWritable(app, "--report", report + ".md");
  }

  std::vector<Config> configs;
  for (double w : worlds) {
    const int world = static_cast<int>(w);
    configs.push_back({"default", world, {}, false});
    ddp::DDPOptions view;
    view.gradientAsBucketView = true;
    configs.push_back({"gradient_as_bucket_view", world, view, false});
    configs.push_back({"noop_hook (no comm)", world, {}, true});
    configs.push_back({"inside Join (even inputs)", world, {}, false, Wrapper::kJoin});
    configs.push_back({"ZeRO (SGD sharded)", world, {}, false, Wrapper::kZero});
  }
  for (double cap : caps) {
    ddp::DDPOptions o;
    o.bucketCapMb = cap;
    char name[64];
    std::snprintf(name, sizeof(name), "bucket_cap_mb=%g", cap);
    configs.push_back({name, 2, o, false});
  }
  std::vector<double> localRuns;
  std::vector<std::vector<Result>> runs(configs.size());
  std::vector<std::vector<TorchFigures>> torchRuns(worlds.size());
  for (int round = 0; round < rounds; ++round) {
    localRuns.push_back(localStepMs());
    for (size_t i = 0; i < configs.size(); ++i) {
      const std::optional<Result> r = runConfig(configs[i]);
      if (!r) {
        // A lost round would leave a median of fewer runs and pair the
        // rounds wrongly (medianAddedMs): the bench stops instead.
        std::fprintf(stderr, "ddp_step_bench: configuration '%s' at world %d failed (the ranks' "
                     "errors are above)\n", configs[i].name.c_str(), configs[i].world);
        return 1;
      }
      runs[i].push_back(*r);
    }
    for (size_t w = 0; w < worlds.size(); ++w) {
      if (auto f = torchFigures(script, static_cast<int>(worlds[w]))) torchRuns[w].push_back(*f);
    }
  }
  const double local = median(localRuns);
  std::printf("local step_ms=%.2f\n", local);
  std::ostringstream md, json;
  md << "# DDP step time: distlab vs local vs PyTorch\n\nReference MLP 4 x [Linear(1024,1024), "
        "ReLU], Linear(1024,10) (4.2M parameters, 16.8 MB of gradients); batch 32 per rank; "
        "cross-entropy; SGD lr 0.01; ranks as processes on shm; OPENBLAS_NUM_THREADS=1; mean of "
     << kSteps << " steps after " << kWarmup << " warm-up steps; median of " << rounds
     << " rounds.\n\n" << blasSummary()  // Note [OpenBLAS kernel family]
     << "\n\nlocal (same model, same per-rank batch, one process): " << local
     << " ms\n\n| config | world | step (ms) | vs local | fwd | bwd compute | bwd comm | "
        "overlap | buckets | last step buckets MB:ready/launched/completed (ms from bwd start) "
        "|\n|---|---|---|---|---|---|---|---|---|---|\n";
  json << "{\n  \"benchmark\": \"ddp_step\",\n  \"blas\": \"" << blasSummary()
       << "\",\n  \"local_step_ms\": " << local
       << ",\n  \"configs\": [\n";
  for (size_t i = 0; i < configs.size(); ++i) {
    std::vector<double> step, fwd, bc, cm, ov;
    for (const auto& r : runs[i]) {
      step.push_back(r.stepMs);
      fwd.push_back(r.fwdMs);
      bc.push_back(r.bwdComputeMs);
      cm.push_back(r.bwdCommMs);
      ov.push_back(r.overlapMs);
    }
    const Result last = runs[i].empty() ? Result{} : runs[i].back();
    char row[1024];
    std::snprintf(row, sizeof(row), "| %s | %d | %.2f | %.2fx | %.2f | %.2f | %.2f | %.2f | %d | %s |\n",
                  configs[i].name.c_str(), configs[i].world, median(step), median(step) / local,
                  median(fwd), median(bc), median(cm), median(ov), last.buckets,
                  last.bucketTimeline.c_str());
    md << row;
    std::printf("%s", row);
    json << "    {\"config\": \"" << configs[i].name << "\", \"world\": " << configs[i].world
         << ", \"step_ms\": " << median(step) << ", \"forward_ms\": " << median(fwd)
         << ", \"backward_compute_ms\": " << median(bc) << ", \"backward_comm_ms\": " << median(cm)
         << ", \"overlap_ms\": " << median(ov) << ", \"buckets\": " << last.buckets
         << ", \"bucket_timeline\": \"" << last.bucketTimeline << "\"}"
         << (i + 1 < configs.size() ? "," : "") << "\n";
  }
  writeWrapperCosts(md, worlds, configs, runs);
  json << "  ],\n  \"torch\": [";
  md << "\n| PyTorch (gloo, --torch_script) | world | local step (ms) | DDP step (ms) | distlab "
        "default DDP step / PyTorch DDP step |\n|---|---|---|---|---|\n";
  for (size_t w = 0; w < worlds.size(); ++w) {
    std::vector<double> tl, td;
    for (const auto& f : torchRuns[w]) {
      tl.push_back(f.local);
      td.push_back(f.ddp);
    }
    const double ours = medianStepMs(configs, runs, "default", static_cast<int>(worlds[w]));
    if (td.empty()) {
      md << "| unavailable | " << worlds[w] << " | - | - | - |\n";
      continue;
    }
    md << "| torch | " << worlds[w] << " | " << median(tl) << " | " << median(td) << " | "
       << ours / median(td) << " |\n";
    std::printf("torch world=%g local=%.2f ddp=%.2f ratio distlab/torch=%.3f\n", worlds[w],
                median(tl), median(td), ours / median(td));
    json << (w ? ", " : "") << "{\"world\": " << worlds[w] << ", \"local_step_ms\": " << median(tl)
         << ", \"ddp_step_ms\": " << median(td) << ", \"ratio_distlab_over_torch\": "
         << ours / median(td) << "}";
  }
  json << "]\n}\n";
  if (!report.empty()) {
    std::ofstream(report + ".md") << md.str();
    std::ofstream(report + ".json") << json.str();
  }
  return 0;
}
