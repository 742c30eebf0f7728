#include "emulator/scenario/worker.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdio>

#include "emulator/faults/fault_backend.hpp"
#include "emulator/faults/faulty_store.hpp"
#include "emulator/link/link_backend.hpp"
#include "emulator/scenario/scenario_parser.hpp"
#include "emulator/trace/rank_trace.hpp"
#include "emulator/workloads/engine_registry.hpp"
#include "emulator/workloads/workloads.hpp"
#include "runtime/comm/debug/flight_recorder.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/comm/store/rendezvous.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/debug_level.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab::emulator {

namespace {

// Every rank reaches this point before any leaves (torchelastic's exit
// barrier): a rank that finishes early must not tear down the store while
// others still need it.
void exitBarrier(comm::Store& store, int rank, int worldSize, std::chrono::milliseconds timeout) {
  store.set(fmt::format("scenario/exit/{}", rank), {1});
  std::vector<std::string> keys;
  for (int q = 0; q < worldSize; ++q) keys.push_back(fmt::format("scenario/exit/{}", q));
  store.wait(keys, timeout);
}

void runRank(const Scenario& s, int rank, FaultPlan& plan,
             const std::shared_ptr<FaultPlan>& planPtr, RankResult& result,
             std::unique_ptr<RankTracer>& tracer, const std::string& tracePath) {
  auto timeout = millisecondsFromSeconds(s.collectiveTimeoutS);
  comm::RendezvousOptions ro;
  ro.timeout = timeout;
  auto rv = comm::rendezvous(ro);
  if (!tracePath.empty()) {
    tracer = std::make_unique<RankTracer>(*rv.store, rv.rank, rv.worldSize, tracePath);
  }
  auto store = std::make_shared<FaultyStore>(rv.store, planPtr);
  bool distributed = s.workloadKind == "collectives" || findEngine(s.training.engine)->distributed;
  comm::ProcessGroupPtr world;
  if (distributed) {
    comm::InitOptions io;
    io.backend = s.backend;
    io.store = store;
    io.rank = rv.rank;
    io.worldSize = rv.worldSize;
    io.timeout = timeout;
    world = comm::initProcessGroup(io);
  }
  if (s.workloadKind == "collectives") {
    runCollectiveWorkload(s.steps, world, plan);
  } else {
    TrainingRunOptions to;
    to.worldSize = s.worldSize;
    to.checkReference = s.expect.paramsMatchReference;
    runTrainingWorkload(s.training, to, rank, world, plan, result);
  }
  // Longer than a collective timeout, so that a peer stuck in a collective
  // reports its own timeout first (it names the collective; this would not).
  if (tracer) tracer->write();  // before the barrier: the runner reads it after the exit
  exitBarrier(*store, rank, s.worldSize, 2 * timeout + std::chrono::seconds(5));
  if (world) comm::destroyProcessGroup();
}

}  // namespace

int runScenarioRank(const std::string& file, const std::string& resultDir, bool trace) {
  RankResult result;
  result.startUs = wallClockNowUs();
  Scenario s;
  int rank = 0;
  try {
    s = parseScenarioFile(file);
    const RuntimeEnv env = readRuntimeEnv();  // runtime/core/runtime_env.hpp
    rank = env.requiredRank();
    int worldSize = env.requiredWorldSize();
    if (worldSize != s.worldSize) {
      throw ValueError(fmt::format("WORLD_SIZE={} but {} has world_size = {}", worldSize, file,
                                   s.worldSize));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "distlab scenario-rank: %s\n", e.what());
    return 2;
  }
  result.rank = rank;
  setDebugLevel(parseDebugLevel(s.debugLevel, "debug"));
  auto log = std::make_shared<EventLog>(fmt::format("{}/rank{}.events", resultDir, rank));
  auto plan = std::make_shared<FaultPlan>(s.faults, rank, log,
                                          millisecondsFromSeconds(s.runTimeoutS + 30));
  setActiveFaultPlan(plan);
  installFaultInjection(plan);
  installLinkEmulation(s.link);
  std::string resultPath = fmt::format("{}/rank{}.json", resultDir, rank);
  std::unique_ptr<RankTracer> tracer;
  const std::string tracePath = trace || s.trace || s.expect.overlap.any()
                                    ? fmt::format("{}/rank{}.trace.json", resultDir, rank)
                                    : std::string();
  try {
    runRank(s, rank, *plan, plan, result, tracer, tracePath);
  } catch (...) {
    auto error = std::current_exception();
    result.status = "error";
    result.errorType = errorTypeName(error);
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      result.message = e.what();
    } catch (...) {
      result.message = "unknown error";
    }
    result.errorUs = result.endUs = wallClockNowUs();
    log->write("error " + result.errorType);
    // Dump this rank's flight recorder now, whatever failed: the runner's
    // analysis needs every rank's dump, and a rank that failed on a peer's
    // report rather than its own watchdog would otherwise exit before the
    // watchdog thread services the peers' dump request.
    comm::dumpFlightRecorders("error", result.message);
    try {
      if (tracer) tracer->write();  // what happened up to the failure
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[rank %d] trace not written: %s\n", rank, e.what());
    }
    writeRankResult(resultPath, result);
    std::fprintf(stderr, "[rank %d] %s: %s\n", rank, result.errorType.c_str(),
                 result.message.c_str());
    std::fflush(stderr);
    comm::settleFlightRecorderDumps();  // the watchdog may be serving a peer's request
    ::_exit(1);  // see the header: no polite teardown after a failure
  }
  result.endUs = wallClockNowUs();
  writeRankResult(resultPath, result);
  return 0;
}

}  // namespace distlab::emulator
