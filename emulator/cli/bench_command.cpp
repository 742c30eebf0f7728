// `distlab bench collectives`: the nccl-tests style collective benchmark
// (emulator/bench/collectives_bench.hpp).
#include <fmt/format.h>

#include <cctype>
#include <iostream>
#include <sstream>

#include "emulator/bench/collectives_bench.hpp"
#include "emulator/cli/command_registry.hpp"
#include "emulator/cli/usage_checks.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::cli {
namespace {

// "a,b" -> {"a", "b"}; an empty list or an empty item is an error naming `flag`.
std::vector<std::string> splitList(const std::string& text, const char* flag) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) {
      throw ValueError(fmt::format("{} '{}': empty item in the comma list", flag, text));
    }
    out.push_back(item);
  }
  if (out.empty()) throw ValueError(fmt::format("{}: give at least one value", flag));
  return out;
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
        std::string peers;
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
      coll->add_flag("--async", flags->options.async,
                     "Also time the asynchronous path (asyncOp=true + Work::wait)");
      coll->add_option("--peer", flags->peers,
                       "Comma list of peers run in the same run: mpi (Open MPI), torch-gloo");
      return std::function<int()>([flags] {
        emulator::CollectivesBenchOptions o = flags->options;
        o.backends = splitList(flags->backends, "--backend");
        o.ops = splitList(flags->ops, "--ops");
        if (!flags->peers.empty()) o.peers = splitList(flags->peers, "--peer");
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
        return emulator::runCollectivesBench(o, std::cout);
      });
    }}};

}  // namespace
}  // namespace distlab::cli
