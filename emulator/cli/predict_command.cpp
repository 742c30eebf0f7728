// `distlab predict TRACE --world N[,N...]`: a traced run's step replayed at
// other world sizes on a modelled topology (emulator/predict/predict.hpp).
//
//   distlab run scenarios/ddp/basic.toml --trace --out /tmp/r
//   distlab predict /tmp/r/ddp__basic.trace.json --world 8,64,1024 --topology dgx-h100
//
// Exit codes: 0 the table was printed; 2 a bad flag, an unreadable or
// malformed trace, a world size out of range, an unknown topology or
// algorithm (one line naming the input); 1 a replay that deadlocks.
#include <iostream>
#include <memory>
#include <string>

#include "emulator/cli/command_registry.hpp"
#include "emulator/cli/usage_checks.hpp"
#include "emulator/predict/predict.hpp"
#include "emulator/predict/trace_program.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::cli {
namespace {

struct PredictFlags {
  std::string worlds;
  std::string algorithm = "auto";
  emulator::PredictOptions options;
};

int runPredictCommand(const PredictFlags& f) {
  emulator::PredictOptions o = f.options;
  for (const auto& item : splitCommaList("--world", f.worlds)) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1 || v > emulator::kMaxPredictWorld) {
      throw ValueError("--world '" + f.worlds + "': '" + item + "' is not a whole number in [1, " +
                       std::to_string(emulator::kMaxPredictWorld) +
                       "] (the replay runs every rank)");
    }
    o.worldSizes.push_back(static_cast<int>(v));
  }
  o.algorithm = emulator::parseAlgorithm(f.algorithm);
  emulator::parseTopology(o.topology);  // a bad spec fails before the trace is read
  if (!o.jsonPath.empty()) requireWritableFile("--json", o.jsonPath);
  if (!o.timelinePath.empty()) requireWritableFile("--timeline", o.timelinePath);
  return emulator::runPredict(o, std::cout);
}

const CommandRegistrar kPredict{Command{
    "predict", "predict a traced run's step at other world sizes on a modelled topology",
    [](CLI::App& sub) -> std::function<int()> {
      auto flags = std::make_shared<PredictFlags>();
      sub.add_option("trace", flags->options.tracePath,
                     "a merged trace (`distlab run --trace`: <out>/<name>.trace.json)")
          ->required();
      sub.add_option("--world", flags->worlds, "comma list of world sizes to predict")
          ->required();
      sub.add_option("--topology", flags->options.topology,
                     "a preset (dgx-h100, pcie-ib, ethernet, flat-<link>) or "
                     "ranks_per_node=N,intra=LINK,inter=LINK[,oversubscription=K]");
      sub.add_option("--algorithm", flags->algorithm,
                     "collective algorithm: auto (the model's cheapest), ring, tree, "
                     "hierarchical, direct");
      sub.add_option("--json", flags->options.jsonPath, "write the rows and tables as JSON");
      sub.add_option("--timeline", flags->options.timelinePath,
                     "write the replay at the first world size as a Chrome trace (8 ranks)");
      return [flags] { return runPredictCommand(*flags); };
    }}};

}  // namespace
}  // namespace distlab::cli
