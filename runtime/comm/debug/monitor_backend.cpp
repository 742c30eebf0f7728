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
  registerLiveness(store_, globalRank_);
  startWatchdog(store_);
  if (const size_t n = flightRecorderBufferSize(); n > 0) {
    recorder_ = std::make_shared<FlightRecorder>(ctx.groupName, ctx.groupDesc, ranks, ctx.rank,
                                                 ForwardingBackend::name(), n);
    registerFlightRecorder(recorder_);
  }
}

MonitorBackend::~MonitorBackend() { unregisterLiveness(store_.get(), globalRank_); }

WorkPtr MonitorBackend::track(WorkPtr work, Milliseconds timeout,
                              std::vector<int64_t> inputSplits,
                              std::vector<int64_t> outputSplits) {
  WatchedWork w;
  w.work = work;
  w.recorder = recorder_;
  if (recorder_) {
    w.recordId =
        recorder_->record(work->info(), timeout, std::move(inputSplits), std::move(outputSplits));
  }
  w.store = store_;
  // What only a timeout needs; an operation that already finished inline is
  // not watched (Note [Watching a finished Work]), so it skips these copies.
  if (!work->isCompleted()) {
    w.backend = weak_from_this();
    w.timeout = timeout;
    w.groupDesc = groupDesc_;
    w.globalRank = globalRank_;
    w.names = names_;
  }
  watchWork(std::move(w));
  return work;
}

WorkPtr MonitorBackend::broadcast(const Tensor& t, const BroadcastOptions& o) {
  return track(inner()->broadcast(t, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::allreduce(const Tensor& t, const AllreduceOptions& o) {
  return track(inner()->allreduce(t, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::allreduceCoalesced(const std::vector<Tensor>& ts,
                                           const AllreduceCoalescedOptions& o) {
  return track(inner()->allreduceCoalesced(ts, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::reduce(const Tensor& t, const ReduceOptions& o) {
  return track(inner()->reduce(t, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::allgather(const std::vector<Tensor>& outs, const Tensor& in,
                                  const AllgatherOptions& o) {
  return track(inner()->allgather(outs, in, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::allgatherIntoTensor(const Tensor& out, const Tensor& in,
                                            const AllgatherOptions& o) {
  return track(inner()->allgatherIntoTensor(out, in, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::allgatherCoalesced(const std::vector<std::vector<Tensor>>& outs,
                                           const std::vector<Tensor>& ins,
                                           const AllgatherOptions& o) {
  return track(inner()->allgatherCoalesced(outs, ins, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::gather(const std::vector<Tensor>& outs, const Tensor& in,
                               const GatherOptions& o) {
  return track(inner()->gather(outs, in, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::scatter(const Tensor& out, const std::vector<Tensor>& ins,
                                const ScatterOptions& o) {
  return track(inner()->scatter(out, ins, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::reduceScatter(const Tensor& out, const std::vector<Tensor>& ins,
                                      const ReduceScatterOptions& o) {
  return track(inner()->reduceScatter(out, ins, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::reduceScatterTensor(const Tensor& out, const Tensor& in,
                                            const ReduceScatterOptions& o) {
  return track(inner()->reduceScatterTensor(out, in, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::alltoall(const std::vector<Tensor>& outs, const std::vector<Tensor>& ins,
                                 const AllToAllOptions& o) {
  return track(inner()->alltoall(outs, ins, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::alltoallBase(const Tensor& out, const Tensor& in,
                                     const std::vector<int64_t>& outSplits,
                                     const std::vector<int64_t>& inSplits,
                                     const AllToAllOptions& o) {
  return track(inner()->alltoallBase(out, in, outSplits, inSplits, extended(o)), o.timeout,
               inSplits, outSplits);
}
WorkPtr MonitorBackend::barrier(const BarrierOptions& o) {
  return track(inner()->barrier(extended(o)), o.timeout);
}
WorkPtr MonitorBackend::send(const Tensor& t, int dst, const SendOptions& o) {
  return track(inner()->send(t, dst, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::recv(const Tensor& t, int src, const RecvOptions& o) {
  return track(inner()->recv(t, src, extended(o)), o.timeout);
}
WorkPtr MonitorBackend::recvAnysource(const Tensor& t, const RecvOptions& o) {
  return track(inner()->recvAnysource(t, extended(o)), o.timeout);
}

}  // namespace distlab::comm
