#pragma once
// The in-memory form of a scenario file (docs/DESIGN.md, "Scenario files"): cluster,
// debug level, workload, faults and expectations. parseScenario()
// (scenario_parser.hpp) builds it and validates everything a file can get
// wrong, so the worker and the runner may assume a well-formed Scenario.
//
// Every element remembers where it came from (`SourcePos`,
// emulator/faults/source_pos.hpp) so later checks (a fault on a step that
// never runs, an expectation on a missing rank) still report
// `file:line: message`. A [[faults]] entry is a FaultSpec
// (emulator/faults/fault_spec.hpp): the fault plan below this room reads it.
// The [workload] (collective steps, training run) is in the workloads room's
// terms (emulator/workloads/workload_spec.hpp), whose drivers run it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "emulator/faults/fault_spec.hpp"
#include "emulator/link/collective_cost.hpp"
#include "emulator/link/link_model.hpp"
#include "emulator/workloads/workload_spec.hpp"

namespace distlab::emulator {

enum class Outcome { kSuccess, kError, kTimeout, kHang };
std::string outcomeName(Outcome outcome);

struct RankExpectation {
  std::string status;          // "" | ok | error | crashed
  std::string error;           // exception type name
  std::vector<std::string> message;  // substrings
  int exitCode = -1;           // crashed: expected exit code
  std::string signal;          // crashed: SIGKILL, SIGABRT, ...
  // Regular expressions (ECMAScript), each matching somewhere in one line of
  // the rank's output (stdout and stderr, rank<R>.log).
  std::vector<std::string> output;
  SourcePos pos;
};

// Overlap expectations (Note [Overlap metrics]), checked on the steps after
// the first of every rank's trace, totals over all ranks.
struct OverlapExpectation {
  std::optional<double> exposedCommMax;   // exposed communication / step time
  std::optional<double> overlapRatioMin;  // overlapped / all communication
  // Every steady step of every rank launches at least this many buckets with
  // backward compute still to come, and waits for none before backward ends
  // (Note [Overlap by structure]).
  std::optional<int> launchesInBackwardMin;
  // [expect.step_time_ratio]: this scenario's mean step time over that of the
  // same scenario with the table's engine_options / comm_hook, run right after
  // it (emulator/scenario/step_time_ratio.hpp).
  bool stepTimeRatio = false;
  std::optional<double> stepTimeRatioMax;
  std::optional<double> stepTimeRatioMin;
  bool any() const { return exposedCommMax || overlapRatioMin || launchesInBackwardMin; }
};

// [expect.predicted]: the traced run's step replayed at another world size
// on the network model (`distlab predict`, emulator/predict/predict.hpp):
// a CI run fails when a change makes the predicted step slower.
struct PredictedExpectation {
  int world = 0;                        // 0: none asked for
  NetworkModel network;                 // `topology` there, else [cluster]'s
  std::optional<double> stepTimeMax;    // seconds, mean steady step
  std::optional<double> exposedShareMax;  // exposed communication / step time
  bool any() const { return world > 0; }
};

// [expect.report.<name>]: a series a program reported
// (distlab::program::report), checked on every rank (or `ranks`).
struct ReportExpectation {
  std::string name;
  std::vector<int> ranks;            // ranks that must report it; empty: every rank
  bool equalAcrossRanks = false;     // the same series, bit for bit, on those ranks
  bool differAcrossRanks = false;    // some two of those ranks' series differ (a bit flip)
  std::optional<double> min, max;    // bounds of every value (NaN fails both)
  bool decreased = false;            // the last value below the first, on each rank
  SourcePos pos;
};

struct Expectation {
  Outcome outcome = Outcome::kSuccess;
  std::string error;                     // on every rank in errorRanks
  std::vector<std::string> message;      // substrings, same ranks
  std::optional<std::vector<int>> errorRanks;  // default: ranks that reported an error
  std::optional<std::vector<int>> culprits;
  std::vector<std::string> diagnosis;    // substrings of the runner's diagnosis
  double detectWithinS = -1;
  bool paramsEqualAcrossRanks = false;
  bool paramsMatchReference = false;
  bool paramsDifferAcrossRanks = false;  // bit_flip scenarios: the checksum must differ
  bool lossDecreased = false;
  std::map<int, RankExpectation> perRank;
  OverlapExpectation overlap;
  PredictedExpectation predicted;
  std::vector<ReportExpectation> reports;  // programs only
  SourcePos pos;
};

struct Scenario {
  std::string path;
  std::string name;
  std::string description;
  std::string group;
  int worldSize = 2;
  std::string backend = "shm";           // shm | gloo | nccl
  // Where the ranks' tensors live: "cpu" or "cuda" (cuda:(rank mod GPUs);
  // Note [Scenarios on a GPU] in scenario_device.hpp).
  std::string device = "cpu";
  LinkModel link;                        // disabled unless given
  // [cluster] topology (+ collective_algorithm): the network model instead of
  // one flat link (emulator/link/collective_cost.hpp); never both.
  std::optional<NetworkModel> network;
  std::string debugLevel = "OFF";        // OFF | INFO | DETAIL
  double collectiveTimeoutS = 10;        // process-group timeout
  double runTimeoutS = 60;               // the runner kills every rank after this
  double teardownGraceS = 2;             // after the first failure, wait this long
  bool trace = false;
  std::string workloadKind = "collectives";  // collectives | training | program
  std::vector<CollectiveStep> steps;
  int iterations = 1;  // kind = "collectives": the script runs this often, a "step" span each
  TrainingWorkload training;
  ProgramWorkload program;
  std::vector<FaultSpec> faults;
  Expectation expect;
};

}  // namespace distlab::emulator
