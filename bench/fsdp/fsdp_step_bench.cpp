// FSDP training-step time: prefetch on vs off, per-block vs root-only wrapping,
// FSDP vs DDP, at several world sizes, without and with a link model.
//
//   OPENBLAS_NUM_THREADS=1 fsdp_step_bench [--worlds=2,4] [--link=ethernet-10g]
//       [--steps=10] [--rounds=3] [--width=512] [--depth=8] [--report=FILE]
//
// Model: Mlp(width -> width x depth -> 10), batch 32 per rank, cross entropy,
// SGD lr 0.01; ranks are forked processes (ranks::spawnRanks) on the shm
// backend; 3 warm-up steps, then `steps` timed steps; rank 0 reports the mean
// step time, the all-gathers per step and the peak of unsharded parameter
// bytes. Each configuration runs `rounds` times, interleaved with the others
// (round-robin), and the median step time is reported, so the ratios within one
// table are comparable; absolute times depend on the machine's load.
// Reports, never gates.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/common/bench_args.hpp"
#include "emulator/launcher/exit_guard.hpp"
#include "emulator/launcher/rank_spawner.hpp"
#include "emulator/link/link_backend.hpp"
#include "runtime/autograd/engine.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/ddp/distributed_data_parallel.hpp"
#include "runtime/fsdp/fully_shard.hpp"
#include "runtime/nn/loss.hpp"
#include "runtime/nn/models/mlp.hpp"
#include "runtime/optim/sgd.hpp"

namespace {

using namespace distlab;

constexpr int kWarmup = 3;

enum class Engine { kFsdpBlockPrefetch, kFsdpBlockNoPrefetch, kFsdpRoot, kDdp };
const char* engineName(Engine e) {
  switch (e) {
    case Engine::kFsdpBlockPrefetch: return "fsdp per-block, prefetch";
    case Engine::kFsdpBlockNoPrefetch: return "fsdp per-block, no prefetch";
    case Engine::kFsdpRoot: return "fsdp root-only";
    case Engine::kDdp: return "ddp";
  }
  return "?";
}

struct Settings {
  int steps = 10;
  int rounds = 3;
  int64_t width = 512;
  int64_t depth = 8;
};

struct Result {
  double stepMs = 0;
  double allGathersPerStep = 0;
  double peakUnshardedMiB = 0;
};

fsdp::FSDPModulePtr shard(const std::shared_ptr<nn::Mlp>& model, Engine e) {
  if (e != Engine::kFsdpRoot) {
    for (const auto& [name, child] : model->layers()->namedChildren()) {
      if (!child->parameters().empty()) fsdp::fullyShard(child);
    }
  }
  auto root = fsdp::fullyShard(model);
  if (e == Engine::kFsdpBlockNoPrefetch) root->setImplicitPrefetch(false, false);
  return root;
}

Result rankMain(ranks::RankContext& ctx, Engine e, const Settings& s) {
  comm::initProcessGroup({.backend = "shm", .store = ctx.store, .worldSize = ctx.worldSize,
                          .rank = ctx.rank, .timeout = std::chrono::seconds(120)});
  Generator gen(0);
  auto model = std::make_shared<nn::Mlp>(nn::MlpOptions{s.width, s.width, s.depth, 10}, gen);
  Generator data(static_cast<uint64_t>(ctx.rank));
  Tensor x = randn({32, s.width}, data);
  Tensor y = randint(0, 10, {32}, data);
  fsdp::FSDPModulePtr root;
  std::unique_ptr<ddp::DistributedDataParallel> ddpModel;
  if (e == Engine::kDdp) {
    ddpModel = std::make_unique<ddp::DistributedDataParallel>(model, comm::defaultGroup());
  } else {
    root = shard(model, e);
  }
  optim::SgdOptions so;
  so.lr = 0.01;
  optim::SGD opt(model->parameters(), so);
  std::chrono::steady_clock::time_point t0;
  int64_t gathersBefore = 0;
  auto gathers = [&] {
    int64_t n = 0;
    if (root) for (auto& m : root->fsdpModulesInTree()) n += m->commCounts().allGathers;
    return n;
  };
  for (int i = 0; i < kWarmup + s.steps; ++i) {
    if (i == kWarmup) {
      t0 = std::chrono::steady_clock::now();
      gathersBefore = gathers();
    }
    opt.zeroGrad();
    Tensor out = ddpModel ? ddpModel->forward(x) : model->forward(x);
    autograd::backward(nn::crossEntropyLoss(out, y));
    opt.step();
  }
  Result r;
  r.stepMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
             s.steps;
  r.allGathersPerStep = static_cast<double>(gathers() - gathersBefore) / s.steps;
  if (root) r.peakUnshardedMiB = root->memoryStats().unshardedParams.peak / 1048576.0;
  comm::destroyProcessGroup();
  return r;
}

Result runConfig(Engine e, int world, const Settings& s, const std::string& dir) {
  const std::string path = dir + "/result";
  ranks::spawnRanks(ranks::SpawnMode::kProcesses, world, [&](ranks::RankContext& ctx) {
    Result r = rankMain(ctx, e, s);
    if (ctx.rank == 0) {
      std::ofstream out(path);
      out << r.stepMs << " " << r.allGathersPerStep << " " << r.peakUnshardedMiB << "\n";
    }
  }, ranks::SpawnOptions{.timeout = std::chrono::seconds(300)});
  Result r;
  std::ifstream in(path);
  in >> r.stepMs >> r.allGathersPerStep >> r.peakUnshardedMiB;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FSDP step time: prefetch, wrapping, FSDP vs DDP", "fsdp_step_bench"};
  std::string worldsText = "2,4";
  std::string link = "ethernet-10g";
  std::string report;
  Settings s;
  app.add_option("--worlds", worldsText, "world sizes, comma separated");
  app.add_option("--link", link, "link preset for the second table (\"none\": skip it)");
  app.add_option("--steps", s.steps, "timed steps")->check(CLI::Range(1, 10000));
  app.add_option("--rounds", s.rounds, "runs per configuration (median reported)")
      ->check(CLI::Range(1, 100));
  app.add_option("--width", s.width, "MLP width")->check(CLI::Range(8, 8192));
  app.add_option("--depth", s.depth, "hidden Linear layers")->check(CLI::Range(1, 64));
  app.add_option("--report", report, "also write the table to this file");
  bench::parseBenchArgs(app, argc, argv);
  const std::vector<int> worlds = bench::intList(app, "--worlds", worldsText, 1, 16);
  std::vector<std::string> links = {"none"};
  if (link != "none") {
    try {
      emulator::linkPreset(link);
    } catch (const std::exception& e) {
      bench::usageError(app, std::string("--link: ") + e.what());
    }
    links.push_back(link);
  }
  if (!report.empty()) bench::requireWritable(app, "--report", report);
  emulator::GuardedTempDir tempDir("fsdp_bench_");
  std::string table = "# fsdp_step_bench: Mlp(" + std::to_string(s.width) + " x " +
                      std::to_string(s.depth) + "), batch 32/rank, shm, " +
                      std::to_string(s.steps) + " timed steps, median of " +
                      std::to_string(s.rounds) + " rounds\n" +
                      "# link         world  engine                        step_ms  AG/step  peak_unsharded_MiB\n";
  const std::vector<Engine> engines = {Engine::kFsdpBlockPrefetch, Engine::kFsdpBlockNoPrefetch,
                                       Engine::kFsdpRoot, Engine::kDdp};
  for (const auto& l : links) {
    emulator::installLinkEmulation(l == "none" ? emulator::LinkModel{} : emulator::linkPreset(l));
    for (int world : worlds) {
      std::vector<std::vector<Result>> runs(engines.size());
      for (int round = 0; round < s.rounds; ++round) {
        for (size_t e = 0; e < engines.size(); ++e) {
          runs[e].push_back(runConfig(engines[e], world, s, tempDir.path()));
        }
      }
      for (size_t e = 0; e < engines.size(); ++e) {
        std::sort(runs[e].begin(), runs[e].end(),
                  [](const Result& a, const Result& b) { return a.stepMs < b.stepMs; });
        const Result& r = runs[e][runs[e].size() / 2];
        char line[256];
        std::snprintf(line, sizeof(line), "  %-13s %5d  %-28s %8.2f %8.1f %12.2f\n", l.c_str(),
                      world, engineName(engines[e]), r.stepMs, r.allGathersPerStep,
                      r.peakUnshardedMiB);
        table += line;
        std::fputs(line, stdout);
        std::fflush(stdout);
      }
    }
  }
  emulator::installLinkEmulation(emulator::LinkModel{});
  if (!report.empty()) std::ofstream(report) << table;
  return 0;
}
