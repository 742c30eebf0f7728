#include "emulator/scenario/rank_session.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "emulator/faults/fault_backend.hpp"
#include "emulator/faults/faulty_store.hpp"
#include "emulator/link/link_backend.hpp"
#include "runtime/comm/debug/flight_recorder.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/debug_level.hpp"

namespace distlab::emulator {

RankSession::RankSession(Scenario scenario, int rank, std::string resultDir, bool trace)
    : scenario_(std::move(scenario)), rank_(rank), resultDir_(std::move(resultDir)) {
  result_.rank = rank;
  result_.startUs = wallClockNowUs();
  const Scenario& s = scenario_;
  setDebugLevel(parseDebugLevel(s.debugLevel, "debug"));
  log_ = std::make_shared<EventLog>(fmt::format("{}/rank{}.events", resultDir_, rank));
  plan_ = std::make_shared<FaultPlan>(s.faults, rank, log_,
                                      millisecondsFromSeconds(s.runTimeoutS + 30));
  setActiveFaultPlan(plan_);
  installFaultInjection(plan_);
  if (s.network) {
    installNetworkEmulation(*s.network);
  } else {
    installLinkEmulation(s.link);
  }
  if (trace || s.trace || s.expect.overlap.any()) {
    tracePath_ = fmt::format("{}/rank{}.trace.json", resultDir_, rank);
  }
}

std::shared_ptr<comm::Store> RankSession::wrapStore(std::shared_ptr<comm::Store> store) {
  return std::make_shared<FaultyStore>(std::move(store), plan_);
}

void RankSession::startTrace(comm::Store& store, int worldSize) {
  if (tracePath_.empty() || tracer_) return;
  tracer_ = std::make_unique<RankTracer>(store, rank_, worldSize, tracePath_);
}

void RankSession::writeTrace() {
  if (!tracer_) return;
  try {
    tracer_->write();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] trace not written: %s\n", rank_, e.what());
  }
}

void RankSession::recordFailure(const std::exception_ptr& error) {
  if (recorded_) return;
  result_.status = "error";
  result_.errorType = errorTypeName(error);
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    result_.message = e.what();
  } catch (...) {
    result_.message = "unknown error";
  }
  result_.errorUs = result_.endUs = wallClockNowUs();
  log_->write("error " + result_.errorType);
  // Dump now, whatever failed: a rank that failed on a peer's report rather
  // than its own watchdog would otherwise exit before its watchdog thread
  // serves the peers' dump request.
  comm::dumpFlightRecorders("error", result_.message);
  writeTrace();  // what happened up to the failure
  writeResult();
  std::fprintf(stderr, "[rank %d] %s: %s\n", rank_, result_.errorType.c_str(),
               result_.message.c_str());
  std::fflush(stderr);
  comm::settleFlightRecorderDumps();  // the watchdog may be serving a peer's request
}

void RankSession::recordSuccess() {
  if (recorded_) return;
  result_.endUs = wallClockNowUs();
  writeResult();
}

void RankSession::writeResult() {
  recorded_ = true;
  writeRankResult(fmt::format("{}/rank{}.json", resultDir_, rank_), result_);
}

}  // namespace distlab::emulator
