// `distlab run FILE|DIR...`: run scenario files (emulator/scenario/runner.hpp)
// and the hidden `distlab scenario-rank FILE --result-dir DIR` the runner
// starts for each rank.
#include <memory>
#include <string>
#include <vector>

#include "emulator/cli/command_registry.hpp"
#include "emulator/scenario/runner.hpp"
#include "emulator/scenario/worker.hpp"

namespace distlab::cli {
namespace {

const CommandRegistrar kRun{Command{
    "run", "Run scenario files (or folders of them) on the emulated cluster",
    [](CLI::App& sub) -> std::function<int()> {
      auto paths = std::make_shared<std::vector<std::string>>();
      auto options = std::make_shared<emulator::RunOptions>();
      sub.add_option("paths", *paths, "Scenario files or folders (searched for *.toml)")
          ->required();
      sub.add_option("--out", options->outDir,
                     "Write <name>.json (and rank logs) per scenario into this folder");
      sub.add_flag("--trace", options->trace,
                   "Also write a merged Chrome trace <name>.trace.json (needs --out)");
      sub.add_flag("-v,--verbose", options->verbose, "Show the ranks' last log line on failure");
      return [paths, options] { return emulator::runScenarios(*paths, *options); };
    }}};

const CommandRegistrar kScenarioRank{Command{
    "scenario-rank", "",  // hidden: started by `distlab run` for each rank
    [](CLI::App& sub) -> std::function<int()> {
      sub.group("");
      auto file = std::make_shared<std::string>();
      auto dir = std::make_shared<std::string>();
      sub.add_option("file", *file, "Scenario file")->required();
      sub.add_option("--result-dir", *dir, "Folder for rank<R>.json and rank<R>.events")
          ->required();
      return [file, dir] { return emulator::runScenarioRank(*file, *dir); };
    }}};

}  // namespace
}  // namespace distlab::cli
