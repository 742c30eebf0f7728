// `distlab run FILE|DIR...`: run scenario files (emulator/scenario/runner.hpp;
// a malformed file is reported and the others still run, exit 2 then), and
// the hidden `distlab scenario-rank FILE --result-dir DIR` the runner starts
// for each rank.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "emulator/cli/command_registry.hpp"
#include "emulator/cli/usage_checks.hpp"
#include "emulator/scenario/runner.hpp"
#include "emulator/scenario/worker.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::cli {
namespace {

// Usage errors (exit 2) before anything runs: a folder with no scenario file
// in it, an --out folder that cannot be written, --trace without --out.
void checkRunArgs(const std::vector<std::string>& paths, const emulator::RunOptions& o) {
  for (const auto& p : paths) {
    if (std::filesystem::is_directory(p) && emulator::collectScenarioFiles({p}).empty()) {
      throw ValueError(fmt::format("{}: no scenario files (*.toml) in this folder", p));
    }
  }
  if (o.trace && o.outDir.empty()) {
    throw ValueError("--trace needs --out DIR: the merged trace is written there");
  }
  if (!o.outDir.empty()) requireWritableDir("--out", o.outDir);
  if (!o.program.empty() && ::access(o.program.c_str(), X_OK) != 0) {
    throw ValueError(fmt::format("--program {}: not an executable file ({}); give the path of "
                                 "your built program",
                                 o.program, std::strerror(errno)));
  }
}

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
      sub.add_option("--program", options->program,
                     "kind = \"program\" scenarios run this executable in place of their "
                     "command's first word (its arguments stay)");
      return [paths, options] {
        checkRunArgs(*paths, *options);
        return emulator::runScenarios(*paths, *options);
      };
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
      auto trace = std::make_shared<bool>(false);
      sub.add_flag("--trace", *trace, "Write rank<R>.trace.json");
      return [file, dir, trace] { return emulator::runScenarioRank(*file, *dir, *trace); };
    }}};

}  // namespace
}  // namespace distlab::cli
