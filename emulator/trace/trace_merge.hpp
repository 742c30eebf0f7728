#pragma once
// Merging the ranks' traces (rank<R>.trace.json, written by each rank with its
// clock offset to rank 0 already applied: Note [Trace clock alignment]) into
// one Chrome trace: pid = rank, "rank R" process names, timestamps rebased so
// the earliest event is at 0, and the ranks' wall-clock event-log instants
// (faults) placed on the timeline through each trace's clock anchor.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace distlab::emulator {

struct RankTraceInput {
  int rank = 0;
  std::string path;  // may be missing (a rank killed before it wrote its trace)
  std::vector<std::pair<int64_t, std::string>> wallInstants;  // (wall us, name)
};

// The merged document; `otherData` is added under "otherData". Ranks without a
// trace file contribute their instants through the first available anchor.
// Throws Error when no rank wrote a trace, or a trace cannot be parsed.
nlohmann::json mergeRankTraces(const std::vector<RankTraceInput>& ranks,
                               const nlohmann::json& otherData);

// Problems with the nesting of complete ('X') events per (pid, tid): a span
// that starts inside another but ends after it. Empty when well nested.
std::vector<std::string> nestingProblems(const nlohmann::json& trace);

}  // namespace distlab::emulator
