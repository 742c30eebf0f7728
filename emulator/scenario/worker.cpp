#include "emulator/scenario/worker.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdio>

#include "emulator/scenario/rank_session.hpp"
#include "emulator/scenario/scenario_device.hpp"
#include "emulator/scenario/scenario_parser.hpp"
#include "emulator/workloads/engine_registry.hpp"
#include "emulator/workloads/workloads.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/comm/store/rendezvous.hpp"
#include "runtime/core/clock.hpp"
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

void runRank(RankSession& session) {
  const Scenario& s = session.scenario();
  const int rank = session.rank();
  auto timeout = millisecondsFromSeconds(s.collectiveTimeoutS);
  comm::RendezvousOptions ro;
  ro.timeout = timeout;
  auto rv = comm::rendezvous(ro);
  session.startTrace(*rv.store, rv.worldSize);
  auto store = session.wrapStore(rv.store);
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
  const Device device = scenarioRankDevice(s, rank);  // Note [Scenarios on a GPU]
  if (s.workloadKind == "collectives") {
    runCollectiveWorkload(s.steps, world, session.plan(), s.iterations, device);
  } else {
    TrainingRunOptions to;
    to.device = device;
    to.worldSize = s.worldSize;
    to.checkReference = s.expect.paramsMatchReference;
    to.probeLoss = s.expect.lossDecreased;
    runTrainingWorkload(s.training, to, rank, world, session.plan(), session.result());
  }
  session.writeTrace();  // before the barrier: the runner reads it after the exit
  // Longer than a collective timeout, so that a peer stuck in a collective
  // reports its own timeout first (it names the collective; this would not).
  exitBarrier(*store, rank, s.worldSize, 2 * timeout + std::chrono::seconds(5));
  if (world) comm::destroyProcessGroup();
}

}  // namespace

int runScenarioRank(const std::string& file, const std::string& resultDir, bool trace) {
  Scenario s;
  int rank = 0;
  try {
    s = parseScenarioFile(file);
    if (s.workloadKind == "program") {
      throw ValueError(fmt::format("{} runs a program; `distlab run` starts it directly", file));
    }
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
  RankSession session(std::move(s), rank, resultDir, trace);
  try {
    runRank(session);
  } catch (...) {
    session.recordFailure(std::current_exception());
    ::_exit(1);  // see the header: no polite teardown after a failure
  }
  session.recordSuccess();
  return 0;
}

}  // namespace distlab::emulator
