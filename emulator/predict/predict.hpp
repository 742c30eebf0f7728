#pragma once
// `distlab predict TRACE`: a traced run's step replayed at other world sizes
// on a modelled topology (trace_program.hpp, simulator.hpp, the network model
// of emulator/link/collective_cost.hpp).
//
// Per target world size it reports, over the steps after the warm-up ones
// (the first two when the trace has more than two; Note [Overlap metrics]):
// the predicted step time (the slowest rank's step span), that rank's compute
// and exposed communication (time it waited in the replay) in the step, the
// communication time (the union of its collectives' spans) and the critical
// path's split, plus a per-collective table of the last step (operation,
// nccl-tests size, algorithm, time alone on the links, time in the replay,
// time it queued after its last issue). `timelinePath` writes the replay as a
// Chrome trace (the first 8 ranks). Several world sizes give one row each
// (a sweep); the JSON holds the rows and the tables.
#include <iosfwd>
#include <string>
#include <vector>

#include "emulator/link/collective_cost.hpp"

namespace distlab::emulator {

struct PredictOptions {
  std::string tracePath;        // a merged trace (`distlab run --trace` writes <name>.trace.json)
  std::vector<int> worldSizes;  // at least one, each in 1..1,048,576
  std::string topology = "dgx-h100";  // topology.hpp: a preset or a written-out spec
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  std::string jsonPath;         // the rows as JSON; empty: none
  std::string timelinePath;     // the replay at the first world size; empty: none
};

struct PredictRow {
  int worldSize = 0;
  int steps = 0;              // steps counted (after warm-up)
  double stepS = 0;           // mean predicted step time
  double computeS = 0;        // per step, on the slowest rank
  double commS = 0;           // per step: union of its collectives' spans
  double exposedS = 0;        // per step: time the slowest rank waited
  double tracedStepS = 0;     // mean traced step time of the same steps (at the traced world)
};

// Prints the table to `out` and writes the files asked for. Throws ValueError
// for bad options or a malformed trace (naming it), Error for a replay that
// deadlocks. Returns 0.
int runPredict(const PredictOptions& options, std::ostream& out);

}  // namespace distlab::emulator
