#include "runtime/comm/debug/monitor_backend.hpp"

#include "runtime/comm/debug/liveness.hpp"
#include "runtime/comm/debug/watchdog.hpp"

namespace distlab::comm {

MonitorBackend::MonitorBackend(BackendPtr inner, const BackendContext& ctx)
    : ForwardingBackend(std::move(inner)),
      store_(ctx.store),
      groupDesc_(ctx.groupDesc),
      globalRank_(ctx.globalRanks.empty() ? ctx.rank : ctx.globalRanks.at(ctx.rank)),
      extend_(watchdogEnabled()) {
  std::vector<int> ranks = ctx.globalRanks;
  if (ranks.empty()) {
    for (int r = 0; r < ctx.size; ++r) ranks.push_back(r);
  }
  names_ = std::make_shared<const RankNames>(ctx.groupName, ranks);
  registerLiveness(store_, globalRank_, ctx.size);
  startWatchdog(store_, ctx.size);
  if (const size_t n = flightRecorderBufferSize(); n > 0) {
    recorder_ = std::make_shared<FlightRecorder>(ctx.groupName, ctx.groupDesc, ranks, ctx.rank,
                                                 ForwardingBackend::name(), n);
    registerFlightRecorder(recorder_);
  }
}

MonitorBackend::~MonitorBackend() { unregisterLiveness(store_.get(), globalRank_); }

WorkPtr MonitorBackend::track(WorkPtr work, const Operation& op) {
  WatchedWork w;
  w.work = work;
  w.recorder = recorder_;
  if (recorder_) {
    w.recordId = recorder_->record(work->info(), op.timeout,
                                   {op.inputSplits.begin(), op.inputSplits.end()},
                                   {op.outputSplits.begin(), op.outputSplits.end()});
  }
  w.store = store_;
  // What only a timeout needs; an operation that already finished inline is
  // not watched (Note [Watching a finished Work]), so it skips these copies.
  if (!work->isCompleted()) {
    w.backend = weak_from_this();
    w.timeout = op.timeout;
    w.groupDesc = groupDesc_;
    w.globalRank = globalRank_;
    w.names = names_;
  }
  watchWork(std::move(w));
  return work;
}

WorkPtr MonitorBackend::intercept(const Operation& op) {
  if (!extend_) return track(forward(op), op);
  Operation extended = op;
  extended.timeout += watchdogGrace(op.timeout);
  return track(forward(extended), op);
}

}  // namespace distlab::comm
