#include "emulator/trace/rank_trace.hpp"

#include <fmt/format.h>

#include "runtime/core/clock.hpp"
#include "runtime/core/trace.hpp"
#include "runtime/core/trace_json.hpp"

namespace distlab::emulator {

RankTracer::RankTracer(comm::Store& store, int rank, int worldSize, std::string path)
    : rank_(rank), path_(std::move(path)) {
  alignment_ = alignClocks(store, rank, worldSize, clockAlignOptionsFor(worldSize));
  trace::nameThisThread("compute");
  trace::start();
}

RankTracer::~RankTracer() {
  if (!written_) trace::stop();
}

void RankTracer::write() {
  if (written_) return;
  written_ = true;
  trace::stop();
  trace::ChromeTraceInfo info;
  info.pid = rank_;
  info.processName = fmt::format("rank {}", rank_);
  info.clockOffsetNs = alignment_.offsetNs;
  info.clockBoundNs = alignment_.boundNs;
  info.anchorMonoNs = monotonicNowNs();
  info.anchorWallUs = wallClockNowUs();
  trace::writeChromeTrace(path_, trace::snapshot(), info);
}

}  // namespace distlab::emulator
