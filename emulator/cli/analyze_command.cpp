// `distlab analyze DUMP...`: reads every rank's flight-recorder dump and
// prints the first divergence per group (emulator/analyze/fr_analysis.hpp).
//
//   distlab analyze /tmp/distlab_fr_rank_*.json
//   distlab analyze --json dumps/*.json
//
// Exit codes: 0 no divergence, 1 a divergence was found, 2 unreadable,
// malformed or oversized dumps: one line naming the file and the field
// (every ValueError of emulator/analyze/dump_reader.hpp, whose Note [Dump
// caps] bounds the memory and time a dump may take).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "emulator/analyze/fr_analysis.hpp"
#include "emulator/cli/command_registry.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::cli {
namespace {

struct AnalyzeFlags {
  std::vector<std::string> dumps;
  bool json = false;
};

std::string toJson(const emulator::AnalysisResult& r) {
  nlohmann::json out{{"ranks", r.ranks}, {"divergences", nlohmann::json::array()}};
  for (const auto& d : r.divergences) {
    out["divergences"].push_back({{"kind", d.kind},
                                  {"group", d.group},
                                  {"group_desc", d.groupDesc},
                                  {"seq", d.seq},
                                  {"op", d.op},
                                  {"culprits", d.culprits},
                                  {"not_joined", d.notJoined},
                                  {"no_dump", d.noDump},
                                  {"not_finished", d.notFinished},
                                  {"text", d.text}});
  }
  return out.dump(2);
}

int runAnalyze(const AnalyzeFlags& f) {
  try {
    const auto result = emulator::analyzeDumps(f.dumps);
    const std::string text = f.json ? toJson(result) + "\n" : result.text;
    std::fputs(text.c_str(), stdout);
    return result.foundDivergence() ? 1 : 0;
  } catch (const ValueError& e) {
    std::fprintf(stderr, "distlab %s\n", e.what());  // "analyze: <file>: <what>"
    return 2;
  }
}

const CommandRegistrar kAnalyze{Command{
    "analyze", "find the first divergence across ranks' flight-recorder dumps",
    [](CLI::App& sub) -> std::function<int()> {
      auto flags = std::make_shared<AnalyzeFlags>();
      sub.add_option("dumps", flags->dumps, "one dump file per rank (<prefix><rank>.json)")
          ->required();
      sub.add_flag("--json", flags->json, "print the result as JSON");
      return [flags] { return runAnalyze(*flags); };
    }}};

}  // namespace
}  // namespace distlab::cli
