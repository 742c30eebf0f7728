// `distlab analyze DUMP...`: reads every rank's flight-recorder dump and
// prints the first divergence per group (emulator/analyze/fr_analysis.hpp).
//
//   distlab analyze /tmp/distlab_fr_rank_*.json
//   distlab analyze --json dumps/*.json
//   distlab analyze torch_dumps/fr_rank_*          # PyTorch's own dumps
//   distlab analyze --export-torch out/ dumps/*.json  # for PyTorch's fr_trace
//
// Dumps may be distlab's JSON or PyTorch's (pickle or JSON), in any mix
// (emulator/analyze/torch_dump_reader.hpp). --export-torch DIR writes each
// dump in PyTorch's format as DIR/fr_rank_<rank> (torch_dump_export.hpp),
// then analyzes as usual.
//
// Exit codes: 0 no divergence, 1 a divergence was found, 2 unreadable,
// malformed or oversized dumps: one line naming the file and the field
// (every ValueError of emulator/analyze/dump_reader.hpp, whose Note [Dump
// caps] bounds the memory and time a dump may take), and a --export-torch
// folder that cannot be created or written.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "emulator/analyze/fr_analysis.hpp"
#include "emulator/analyze/torch_dump_export.hpp"
#include "emulator/cli/command_registry.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::cli {
namespace {

struct AnalyzeFlags {
  std::vector<std::string> dumps;
  bool json = false;
  std::string exportTorch;  // folder; empty: no export
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
                                  {"pytorch_match_state", d.matchState},
                                  {"text", d.text}});
  }
  return out.dump(2);
}

int runAnalyze(const AnalyzeFlags& f) {
  try {
    if (!f.exportTorch.empty()) {
      for (const auto& p : emulator::exportTorchDumps(f.dumps, f.exportTorch)) {
        std::fprintf(stderr, "wrote %s\n", p.c_str());
      }
    }
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
      sub.add_option(
             "dumps", flags->dumps,
             "one dump file per rank: distlab's <prefix><rank>.json or PyTorch's <prefix><rank>")
          ->required();
      sub.add_flag("--json", flags->json, "print the result as JSON");
      sub.add_option("--export-torch", flags->exportTorch,
                     "also write each dump in PyTorch's format (pickle) as DIR/fr_rank_<rank>, "
                     "for PyTorch's fr_trace analyzer");
      return [flags] { return runAnalyze(*flags); };
    }}};

}  // namespace
}  // namespace distlab::cli
