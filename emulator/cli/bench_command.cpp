// `distlab bench collectives`: the nccl-tests style collective benchmark
// (emulator/bench/collectives_bench.hpp).
#include <iostream>
#include <sstream>

#include "emulator/bench/collectives_bench.hpp"
#include "emulator/cli/command_registry.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::cli {
namespace {

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Parses "8", "64K", "64M", "1G" (binary units).
uint64_t parseBytes(const std::string& text, const char* flag) {
  size_t used = 0;
  uint64_t value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    throw ValueError(std::string(flag) + ": '" + text + "' is not a byte count (e.g. 8, 64K, 64M)");
  }
  const std::string unit = text.substr(used);
  if (unit == "K" || unit == "KiB") return value << 10;
  if (unit == "M" || unit == "MiB") return value << 20;
  if (unit == "G" || unit == "GiB") return value << 30;
  if (!unit.empty() && unit != "B") {
    throw ValueError(std::string(flag) + ": unknown unit '" + unit + "' (use B, K, M or G)");
  }
  return value;
}

const CommandRegistrar kBench{Command{
    "bench", "Benchmarks (nccl-tests style tables)", [](CLI::App& sub) {
      sub.require_subcommand(1);
      CLI::App* coll = sub.add_subcommand(
          "collectives", "Collective bandwidth/latency per backend (results verified)");
      struct Flags {
        std::string backends = "shm";
        std::string ops = "allreduce,allgather,reduce_scatter,broadcast,alltoall";
        std::string minBytes = "8";
        std::string maxBytes = "64M";
        std::vector<std::string> backendOptions;
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
      coll->add_option("--option", flags->backendOptions,
                       "Backend option key=value (repeatable), e.g. shm.slot_bytes=1048576");
      coll->add_option("--json", flags->options.jsonPath, "Write the results as JSON here");
      return std::function<int()>([flags] {
        emulator::CollectivesBenchOptions o = flags->options;
        o.backends = splitList(flags->backends);
        o.ops = splitList(flags->ops);
        o.minBytes = parseBytes(flags->minBytes, "--min-bytes");
        o.maxBytes = parseBytes(flags->maxBytes, "--max-bytes");
        for (const auto& kv : flags->backendOptions) {
          const auto eq = kv.find('=');
          if (eq == std::string::npos || eq == 0) {
            throw ValueError("--option '" + kv + "' is not key=value");
          }
          o.backendOptions[kv.substr(0, eq)] = kv.substr(eq + 1);
        }
        return emulator::runCollectivesBench(o, std::cout);
      });
    }}};

}  // namespace
}  // namespace distlab::cli
