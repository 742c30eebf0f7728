#pragma once
// Merges the ranks' event logs into one Chrome trace-event JSON file (opens
// in Perfetto / chrome://tracing): one process per rank, collectives as
// complete events ("X", issue -> completion; still running at the end: to
// the last event), faults and training steps as instant events.
#include <string>
#include <vector>

#include "emulator/scenario/diagnosis.hpp"

namespace distlab::emulator {

void writeMergedTrace(const std::string& path, const Scenario& s,
                      const std::vector<RankEvents>& events);

}  // namespace distlab::emulator
