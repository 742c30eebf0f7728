#pragma once
// `distlab predict TRACE`: a traced run's step replayed at other world sizes
// on a modelled topology (trace_program.hpp, simulator.hpp, the network model
// of emulator/link/collective_cost.hpp).
//
// Per target world size it reports, over the steps after the warm-up ones
// (the first two when the trace has more than two; Note [Overlap metrics]):
// the predicted step time (the slowest rank's step span), that rank's compute,
// its exposed communication (time it waited for a collective that had
// started: the network's share of the critical path) and its imbalance (time
// it waited for a slower rank to issue a collective, Note [Waiting for the
// last rank]), the communication time (the union of the collectives' spans),
// the critical path of the last step (Note [Critical path]), plus a
// per-collective table of that step (operation,
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
  std::vector<int> worldSizes;  // at least one, each in 1..kMaxPredictWorld (65,536)
  std::string topology = "dgx-h100";  // topology.hpp: a preset or a written-out spec
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  std::string jsonPath;         // the rows as JSON; empty: none
  std::string timelinePath;     // the replay at the first world size; empty: none
};

// Note [Critical path] (predict.cpp): what the last step's length is made of.
struct CriticalPath {
  double computeS = 0;
  double commS = 0;                      // collectives on the path, queueing included
  std::vector<std::string> collectives;  // from the end backwards
  std::vector<int> ranks;                // the ranks the path passes through
};

struct PredictRow {
  int worldSize = 0;
  int steps = 0;              // steps counted (after warm-up)
  double stepS = 0;           // mean predicted step time
  double computeS = 0;        // per step, on the slowest rank
  double commS = 0;           // per step: union of its collectives' spans
  double exposedS = 0;        // per step: the slowest rank's wait for started collectives
  double imbalanceS = 0;      // per step: its wait for slower ranks (before the collective started)
  double tracedStepS = 0;     // mean traced step time of the same steps (at the traced world)
  CriticalPath lastStepPath;
};

struct TracedRun;  // trace_program.hpp

// The row of one world size: `run` replayed at `worldSize` on `network`
// (what a scenario's [expect.predicted] checks). Throws as runPredict.
PredictRow predictStep(const TracedRun& run, int worldSize, const NetworkModel& network);

// Prints the table to `out` and writes the files asked for. Throws ValueError
// for bad options or a malformed trace (naming it), Error for a replay that
// deadlocks. Returns 0.
int runPredict(const PredictOptions& options, std::ostream& out);

}  // namespace distlab::emulator
