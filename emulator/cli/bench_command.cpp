// `distlab bench collectives` (the nccl-tests style collective benchmark,
// emulator/bench/collectives_bench.hpp), `distlab bench overlap`
// (overlap_bench.hpp) and `distlab bench scale` (scale_bench.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>

#include "emulator/bench/collectives_bench.hpp"
#include "emulator/cli/command_registry.hpp"
#include "emulator/cli/usage_checks.hpp"
#include "emulator/link/link_model.hpp"
#include "emulator/bench/overlap_bench.hpp"
#include "emulator/bench/scale_bench.hpp"
#include "emulator/scenario/scenario_device.hpp"
#include "emulator/workloads/engine_registry.hpp"
#include "emulator/workloads/workload_spec.hpp"
#include "runtime/comm/backend_registry.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::cli {
namespace {

// This process's argv, as nccl-tests records its own in its JSON file.
std::vector<std::string> thisCommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
  return args;
}

// Parses "8", "64K", "64M", "1G" (binary units), at most kMaxBenchBytes.
uint64_t parseBytes(const std::string& text, const char* flag) {
  size_t used = 0;
  uint64_t value = 0;
  const bool digits = !text.empty() && std::isdigit(static_cast<unsigned char>(text[0]));
  try {
    if (digits) value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0) {
    throw ValueError(fmt::format("{} '{}' is not a byte count (e.g. 8, 64K, 64M)", flag, text));
  }
  const std::string unit = text.substr(used);
  int shift = 0;
  if (unit == "K" || unit == "KiB") shift = 10;
  else if (unit == "M" || unit == "MiB") shift = 20;
  else if (unit == "G" || unit == "GiB") shift = 30;
  else if (!unit.empty() && unit != "B") {
    throw ValueError(fmt::format("{}: unknown unit '{}' (use B, K, M or G)", flag, unit));
  }
  if (value > (emulator::kMaxBenchBytes >> shift)) {
    throw ValueError(fmt::format("{} '{}' is past the largest size, {} bytes (1G)", flag, text,
                                 emulator::kMaxBenchBytes));
  }
  return value << shift;
}

// "2,4" -> {2, 4}, each in [lo, hi]; anything else is an error naming `flag`.
template <typename T>
std::vector<T> numberList(const std::string& text, const char* flag, double lo, double hi) {
  std::vector<T> out;
  for (const auto& item : splitCommaList(flag, text)) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || !(v >= lo && v <= hi) || static_cast<double>(T(v)) != v) {
      throw ValueError(fmt::format("{} '{}': '{}' is not a number in [{}, {}]{}", flag, text,
                                   item, lo, hi, std::is_integral_v<T> ? " (whole)" : ""));
    }
    out.push_back(static_cast<T>(v));
  }
  return out;
}

// --model and --gpt (vocab,block,embd,heads,layers; the scenario's gpt table
// ranges, checked here so a bad value is a usage error, not a failed run).
void readModelFlags(const std::string& gpt, emulator::OverlapBenchOptions& o) {
  if (o.model != "mlp" && o.model != "residual_mlp" && o.model != "gpt") {
    throw ValueError("--model '" + o.model + "': use mlp, residual_mlp or gpt");
  }
  if (gpt.empty()) return;
  if (o.model != "gpt") throw ValueError("--gpt needs --model gpt");
  using G = emulator::GptWorkload;
  o.gpt = numberList<int64_t>(gpt, "--gpt", 1, G::kMaxVocab);
  if (o.gpt.size() != 5) {
    throw ValueError("--gpt '" + gpt + "': give five numbers vocab,block,embd,heads,layers");
  }
  const int64_t vocab = o.gpt[0], block = o.gpt[1], embd = o.gpt[2], heads = o.gpt[3];
  if (vocab < G::kMinVocab || block > G::kMaxBlock || embd > G::kMaxEmbd ||
      heads > G::kMaxHeads || o.gpt[4] > G::kMaxLayers || embd % heads != 0) {
    throw ValueError(fmt::format(
        "--gpt '{}': vocab {}..{}, block 1..{}, embd 1..{} and a multiple of heads (1..{}), "
        "layers 1..{}",
        gpt, G::kMinVocab, G::kMaxVocab, G::kMaxBlock, G::kMaxEmbd, G::kMaxHeads,
        G::kMaxLayers));
  }
}

// --hooks: the DDP engine's comm_hook names, checked before any run starts.
void checkCommHooks(const std::vector<std::string>& hooks) {
  const emulator::EngineInfo* ddp = emulator::findEngine("ddp");
  if (ddp == nullptr) throw Error("bench overlap: the ddp engine is not linked in");
  for (const auto& hook : hooks) {
    if (std::find(ddp->commHooks.begin(), ddp->commHooks.end(), hook) == ddp->commHooks.end()) {
      throw ValueError(
          fmt::format("--hooks '{}': use {}", hook, fmt::join(ddp->commHooks, ", ")));
    }
  }
}

// --device: cpu or cuda, and for cuda a usable GPU (else nothing would run).
void checkOverlapDevice(const emulator::OverlapBenchOptions& o) {
  if (o.device != "cpu" && o.device != "cuda") {
    throw ValueError("--device '" + o.device + "': use cpu or cuda");
  }
  emulator::Scenario probe;
  probe.device = o.device;
  if (auto why = emulator::deviceSkipReason(probe)) {
    throw DistBackendError("bench overlap --device cuda: " + *why);
  }
}

// `distlab bench overlap` (emulator/bench/overlap_bench.hpp): the subcommand
// and its action.
std::pair<CLI::App*, std::function<int()>> addOverlapCommand(CLI::App& sub) {
  CLI::App* ov = sub.add_subcommand(
      "overlap", "DDP (and FSDP) communication/compute overlap per bucket size, comm hook, link");
  struct Flags {
    std::string worldSizes = "2,4", links = "ethernet-10g,ethernet-100g";
    std::string caps = "0.05,1,5,25,1024", hooks = "noop,fp16_compress,powersgd";
    std::string sizes = "512,2048,2048,2048,16";
    std::string gpt;
    std::string fsdp = "block,block_no_prefetch,root";
    bool noOverhead = false;
    emulator::OverlapBenchOptions options;
  };
  auto f = std::make_shared<Flags>();
  ov->add_option("--world-sizes", f->worldSizes, "Comma list of world sizes (2..8)");
  ov->add_option("--links", f->links, "Comma list of link presets (distlab run's link names)");
  ov->add_option("--caps", f->caps, "Comma list of bucket_cap_mb values (hook none)");
  allowEmptyValue(ov->add_option("--hooks", f->hooks,
                                 "Comma list of comm hooks at bucket_cap_mb 25 ('' none)"));
  allowEmptyValue(ov->add_option(
      "--fsdp", f->fsdp, "Comma list of FSDP rows: block, block_no_prefetch, root ('' none)"));
  ov->add_option("--model", f->options.model, "mlp | residual_mlp | gpt");
  ov->add_option("--sizes", f->sizes, "The model's widths (scenario 'sizes'; mlp, residual_mlp)");
  ov->add_option("--gpt", f->gpt,
                 "--model gpt: vocab,block,embd,heads,layers (default 256,64,256,4,4)");
  ov->add_option("--steps", f->options.steps, "Training steps per run (>= 3; two are warm-up)");
  ov->add_option("--batch-size", f->options.batchSize, "Rows per rank per step");
  ov->add_option("--rounds", f->options.rounds,
                 "Runs per configuration, interleaved; rows are medians (default 1)");
  ov->add_flag("--no-tracing-overhead", f->noOverhead, "Skip the traced-vs-untraced runs");
  ov->add_option("--overhead-repeats", f->options.overheadRepeats, "Runs each, traced and not");
  ov->add_option("--device", f->options.device,
                 "cpu, or cuda: the ranks' models on the GPU, sharing it over shm");
  ov->add_option("--json", f->options.jsonPath, "Write the results as JSON here");
  return {ov, [f] {
    emulator::OverlapBenchOptions o = f->options;
    o.worldSizes = numberList<int>(f->worldSizes, "--world-sizes", 2, 8);
    o.links = splitCommaList("--links", f->links);
    for (const auto& l : o.links) emulator::linkPreset(l);  // ValueError names the presets
    o.capsMb = numberList<double>(f->caps, "--caps", 1e-4, 1 << 20);
    o.hooks = splitCommaList("--hooks", f->hooks, /*allowEmpty=*/true);
    checkCommHooks(o.hooks);
    o.sizes = numberList<int64_t>(f->sizes, "--sizes", 1, 4096);
    readModelFlags(f->gpt, o);
    o.fsdpWraps = splitCommaList("--fsdp", f->fsdp, /*allowEmpty=*/true);
    for (const auto& w : o.fsdpWraps) {
      if (w != "block" && w != "block_no_prefetch" && w != "root") {
        throw ValueError("--fsdp '" + w + "': use block, block_no_prefetch or root");
      }
    }
    o.tracingOverhead = !f->noOverhead;
    if (o.steps < 3) throw ValueError("--steps must be at least 3 (the first two are warm-up)");
    if (o.batchSize < 1) throw ValueError("--batch-size must be at least 1");
    if (o.rounds < 1 || o.rounds > 100) throw ValueError("--rounds must be in [1, 100]");
    if (o.overheadRepeats < 1) throw ValueError("--overhead-repeats must be at least 1");
    if (!o.jsonPath.empty()) requireWritableFile("--json", o.jsonPath);
    checkOverlapDevice(o);
    return emulator::runOverlapBench(o, std::cout);
  }};
}

// `distlab bench scale` (emulator/bench/scale_bench.hpp): run under `distlab launch`.
std::pair<CLI::App*, std::function<int()>> addScaleCommand(CLI::App& sub) {
  CLI::App* scale = sub.add_subcommand(
      "scale", "What a group costs as it grows: start-up, latency, DETAIL, group creation "
               "(run as the ranks of `distlab launch`)");
  auto o = std::make_shared<emulator::ScaleBenchOptions>();
  scale->add_option("--backend", o->backend, "Backend of the groups (shm, gloo)");
  scale->add_option("--iters", o->iters, "Timed iterations per row (1..100000)");
  scale->add_option("--warmup", o->warmup, "Untimed iterations per row (0..100000)");
  scale->add_option("--timeout", o->timeoutS, "The groups' collective timeout in seconds");
  scale->add_option("--subgroup-size", o->subgroupSize,
                    "newSubgroups' group size (capped at the world size; must divide it)");
  scale->add_option("--json", o->jsonPath, "Rank 0 writes the results as JSON here");
  return {scale, [o] {
            comm::lookupBackend(o->backend);  // ValueError naming the choices
            if (!o->jsonPath.empty()) requireWritableFile("--json", o->jsonPath);
            return emulator::runScaleBench(*o, std::cout);
          }};
}

const CommandRegistrar kBench{Command{
    "bench", "Benchmarks (nccl-tests style tables)", [](CLI::App& sub) {
      sub.require_subcommand(1);
      CLI::App* coll = sub.add_subcommand(
          "collectives", "Collective bandwidth/latency per backend (results verified)");
      struct Flags {
        std::string backends = "shm";
        std::string ops = fmt::format("{}", fmt::join(emulator::kBenchOps, ","));
        std::string minBytes = "8";
        std::string maxBytes = "64M";
        std::string peers;
        std::string debug = "off";
        std::vector<std::string> backendOptions;
        int check = 1;
        emulator::CollectivesBenchOptions options;
      };
      auto flags = std::make_shared<Flags>();
      coll->add_option("--backend", flags->backends, "Comma list of backends, e.g. shm,gloo");
      coll->add_option("--world-size", flags->options.worldSize, "Ranks to start (forked)");
      coll->add_option("--ops", flags->ops, "Comma list of collectives");
      coll->add_option("--min-bytes", flags->minBytes, "Smallest size (8, 64K, 1M)");
      coll->add_option("--max-bytes", flags->maxBytes, "Largest size (doubling from min)");
      coll->add_option("--iters", flags->options.iters, "Timed iterations per size (0: auto)");
      coll->add_option("--warmup", flags->options.warmup, "Untimed iterations per size");
      coll->add_option("--rounds", flags->options.rounds,
                       "Sweeps of every series and peer, alternating which runs first; rows "
                       "and ratios are medians over them (1..100, default 1)");
      coll->add_option("--option", flags->backendOptions,
                       "Backend option key=value (repeatable), e.g. shm.slot_bytes=1048576");
      coll->add_option("--json", flags->options.jsonPath, "Write the results as JSON here");
      coll->add_option("--csv", flags->options.csvPath,
                       "Write the results as CSV with nccl-tests' columns and units here");
      coll->add_option("--nccl-json", flags->options.ncclJsonPath,
                       "Write the results as nccl-tests' JSON file (version 2) here");
      coll->add_option("-c,--check", flags->check,
                       "Count wrong elements (1, default) or not (0), as nccl-tests' -c")
          ->check(CLI::Range(0, 1));
      coll->add_option("-a,--average", flags->options.average,
                       "The time --csv and --nccl-json report, as nccl-tests' -a: each rank's "
                       "mean reduced across ranks by 0 rank 0, 1 mean (default), 2 min, 3 max")
          ->check(CLI::Range(0, 3));
      coll->add_option("--device", flags->options.device,
                       "Buffers on cpu, cuda (host backends stage through pinned memory) or "
                       "auto (cuda for nccl only)")
          ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
      coll->add_flag("--async", flags->options.async,
                     "Also time the asynchronous path (asyncOp=true + Work::wait)");
      coll->add_option("--debug", flags->debug,
                       "Comma list of debug layers on the forked ranks' groups, one series "
                       "each: off, monitor (flight recorder + watchdog, as initProcessGroup "
                       "installs), detail (also the DETAIL collective checks)");
      CLI::Option* peerFlag =
          coll->add_option("--peer", flags->peers,
                           "Comma list of peers run in the same run: mpi (Open MPI), torch-gloo");
      auto [overlap, overlapAction] = addOverlapCommand(sub);
      auto [scale, scaleAction] = addScaleCommand(sub);
      return std::function<int()>([flags, peerFlag, overlap = overlap, overlapAction = overlapAction,
                                   scale = scale, scaleAction = scaleAction] {
        if (overlap->parsed()) return overlapAction();
        if (scale->parsed()) return scaleAction();
        emulator::CollectivesBenchOptions o = flags->options;
        o.backends = splitCommaList("--backend", flags->backends);
        o.ops = splitCommaList("--ops", flags->ops);
        o.debug = splitCommaList("--debug", flags->debug);
        // Given but empty (`--peer ''`) is an error, not "no peers".
        if (peerFlag->count() > 0) o.peers = splitCommaList("--peer", flags->peers);
        o.minBytes = parseBytes(flags->minBytes, "--min-bytes");
        o.maxBytes = parseBytes(flags->maxBytes, "--max-bytes");
        for (const auto& kv : flags->backendOptions) {
          const auto eq = kv.find('=');
          if (eq == std::string::npos || eq == 0) {
            throw ValueError("--option '" + kv + "' is not key=value");
          }
          o.backendOptions[kv.substr(0, eq)] = kv.substr(eq + 1);
        }
        if (!o.jsonPath.empty()) requireWritableFile("--json", o.jsonPath);
        if (!o.csvPath.empty()) requireWritableFile("--csv", o.csvPath);
        if (!o.ncclJsonPath.empty()) requireWritableFile("--nccl-json", o.ncclJsonPath);
        o.check = flags->check == 1;
        o.commandLine = thisCommandLine();
        return emulator::runCollectivesBench(o, std::cout);
      });
    }}};

}  // namespace
}  // namespace distlab::cli
