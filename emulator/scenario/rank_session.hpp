#pragma once
// One rank's scenario machinery, the same for a built-in workload (the
// `scenario-rank` worker, worker.hpp) and a user's program (distlab::program,
// through initProcessGroup's init hook; Note [Programs under a scenario] in
// runtime/comm/init_hook.hpp): the debug level, the event log, the fault plan
// with its fault and link decorators, the faulty store, the trace, and the
// rank's result file (rank<R>.json), written once, on success or failure.
#include <exception>
#include <memory>
#include <string>

#include "emulator/faults/event_log.hpp"
#include "emulator/faults/fault_plan.hpp"
#include "emulator/scenario/scenario.hpp"
#include "emulator/trace/rank_trace.hpp"
#include "emulator/workloads/rank_result.hpp"
#include "runtime/comm/store/store.hpp"

namespace distlab::emulator {

class RankSession {
 public:
  // Sets the process's debug level, opens rank<R>.events in `resultDir`,
  // installs the fault plan (also as the active one) and the fault and link
  // decorators. `trace`: record rank<R>.trace.json (also when the scenario
  // says trace = true or expects overlap metrics).
  RankSession(Scenario scenario, int rank, std::string resultDir, bool trace);
  RankSession(const RankSession&) = delete;
  RankSession& operator=(const RankSession&) = delete;

  const Scenario& scenario() const { return scenario_; }
  int rank() const { return rank_; }
  FaultPlan& plan() { return *plan_; }
  RankResult& result() { return result_; }

  // The store every group uses: `store` behind the scenario's store faults.
  std::shared_ptr<comm::Store> wrapStore(std::shared_ptr<comm::Store> store);
  // Collective over the store when this rank traces (every rank of a run
  // traces alike); nothing otherwise.
  void startTrace(comm::Store& store, int worldSize);
  // Stops the trace and writes it (once; a failure to write is reported on
  // stderr, never thrown: the rank's result matters more).
  void writeTrace();

  // The rank's result as an error (type and message from `error`), with the
  // event log line, this rank's flight-recorder dump (the runner's analysis
  // needs every rank's), the trace so far and a line on stderr. Returns once
  // the flight recorder settled; the caller exits without tearing down (peers
  // may be stuck). Only the first of recordFailure / recordSuccess writes.
  void recordFailure(const std::exception_ptr& error);
  void recordSuccess();
  bool recorded() const { return recorded_; }

 private:
  void writeResult();

  Scenario scenario_;
  int rank_;
  std::string resultDir_;
  std::string tracePath_;
  std::shared_ptr<EventLog> log_;
  std::shared_ptr<FaultPlan> plan_;
  std::unique_ptr<RankTracer> tracer_;
  RankResult result_;
  bool recorded_ = false;
};

}  // namespace distlab::emulator
