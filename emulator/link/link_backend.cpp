#include "emulator/link/link_backend.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <queue>
#include <thread>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/comm_trace.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/trace.hpp"

namespace distlab::emulator {

using comm::OpType;
using comm::WorkPtr;
using SteadyClock = std::chrono::steady_clock;

namespace {

class TimerThread {
 public:
  TimerThread()
      : thread_([this] {
          trace::nameThisThread("link timer");
          loop();
        }) {}
  ~TimerThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void schedule(SteadyClock::time_point when, std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push(Entry{when, next_++, std::move(fn)});
    }
    cv_.notify_all();
  }

 private:
  struct Entry {
    SteadyClock::time_point when;
    uint64_t order;
    std::function<void()> fn;
    bool operator>(const Entry& o) const {
      return when != o.when ? when > o.when : order > o.order;
    }
  };
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      if (queue_.empty()) {
        if (stop_) return;
        cv_.wait(lock);
        continue;
      }
      auto when = queue_.top().when;
      if (SteadyClock::now() < when && !stop_) {
        cv_.wait_until(lock, when);
        continue;
      }
      auto fn = queue_.top().fn;
      queue_.pop();
      lock.unlock();
      fn();
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue_;
  uint64_t next_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

TimerThread& timer() {
  static TimerThread instance;
  return instance;
}

// Relays the inner Work's transitions to the outer one (WorkObserver must not
// block: it only schedules). `afterInner`: for a message, the modelled time
// counted again from the inner completion (Note [Messages on emulated links]).
class Relay : public comm::WorkObserver {
 public:
  Relay(WorkPtr outer, SteadyClock::time_point end, SteadyClock::duration afterInner)
      : outer_(std::move(outer)), end_(end), afterInner_(afterInner) {}
  void onStarted(const comm::Work&) override { comm::WorkCompletion::markStarted(*outer_); }
  void onCompleted(const comm::Work& inner) override {
    if (!inner.isSuccess()) {
      comm::WorkCompletion::finish(*outer_, inner.exception());
      return;
    }
    int source = inner.sourceRank();
    auto outer = outer_;
    const auto end = std::max(end_, SteadyClock::now() + afterInner_);
    scheduleAt(end, [outer, source] {
      if (source >= 0) comm::WorkCompletion::setSourceRank(*outer, source);
      comm::WorkCompletion::finish(*outer);
    });
  }

 private:
  WorkPtr outer_;
  SteadyClock::time_point end_;
  SteadyClock::duration afterInner_;
};

// The modelled transfer on the group's "link <group>" track (FIFO, so these
// never overlap; Note [Trace tracks]).
void traceTransfer(const comm::WorkInfo& info, SteadyClock::time_point start,
                   SteadyClock::time_point end) {
  auto ns = [](SteadyClock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  trace::completeOn(trace::virtualTrack("link " + info.groupName), trace::Category::kMark,
                    fmt::format("link {} #{}", comm::traceOpName(info.opType), info.seq), ns(start),
                    ns(end));
}

}  // namespace

void scheduleAt(SteadyClock::time_point when, std::function<void()> fn) {
  timer().schedule(when, std::move(fn));
}

LinkBackend::LinkBackend(comm::BackendPtr inner, LinkModel model)
    : ForwardingBackend(std::move(inner)), model_(std::move(model)) {}

LinkBackend::LinkBackend(comm::BackendPtr inner, NetworkModel network,
                         std::vector<int> globalRanks)
    : ForwardingBackend(std::move(inner)),
      network_(std::move(network)),
      globalRanks_(std::move(globalRanks)) {
  if (globalRanks_.empty()) {  // a group that did not say: the first size() ranks
    for (int r = 0; r < size(); ++r) globalRanks_.push_back(r);
  }
  shape_ = shapeOf(network_->topology, globalRanks_);
}

double LinkBackend::modelledSeconds(OpType op, int64_t bytes, int peer) const {
  if (!network_) return model_.seconds(op, bytes, size());
  const Topology& t = network_->topology;
  const bool p2p = comm::isPointToPoint(op);
  // A receive from any source: the model cannot know the sender; charge the
  // link between nodes (the slower one).
  const bool crossNode =
      p2p && (peer < 0 || peer >= static_cast<int>(globalRanks_.size()) ||
              t.nodeOf(globalRanks_[peer]) != t.nodeOf(globalRanks_[rank()]));
  return collectiveCostOrAuto(t, op, bytes, shape_, network_->algorithm, crossNode).seconds();
}

WorkPtr LinkBackend::delay(WorkPtr inner, OpType op, int64_t bytes, std::vector<Tensor> outputs) {
  const int peer = inner->info().peer;
  auto cost = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(modelledSeconds(op, bytes, peer)));
  SteadyClock::time_point start, end;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    start = std::max(SteadyClock::now(), linkFreeAt_);
    end = start + cost;
    linkFreeAt_ = end;
  }
  if (trace::enabled()) traceTransfer(inner->info(), start, end);
  auto outer = std::make_shared<comm::RelayedWork>(inner->info(), std::move(outputs), inner);
  const auto afterInner = comm::isPointToPoint(op) ? cost : SteadyClock::duration::zero();
  inner->addObserver(std::make_shared<Relay>(outer, end, afterInner));
  return outer;
}

// What the model is given: the bytes each rank contributes, except where the
// result is the larger side (all-gathers, a recv) and gather / scatter, whose
// root moves one rank's share per rank.
int64_t LinkBackend::modelledBytes(const comm::Operation& op) const {
  switch (op.type) {
    case OpType::kAllgather:
    case OpType::kAllgatherBase:
    case OpType::kAllgatherCoalesced:
    case OpType::kRecv:
    case OpType::kRecvAnysource:
      return comm::outputBytes(op);
    case OpType::kGather:
      return comm::inputBytes(op) * size();
    case OpType::kScatter:
      return comm::outputBytes(op) * size();
    default:
      return comm::inputBytes(op);
  }
}

WorkPtr LinkBackend::intercept(const comm::Operation& op) {
  return delay(forward(op), op.type, modelledBytes(op), comm::writtenTensors(op));
}

void installNetworkEmulation(const NetworkModel& network) {
  comm::addBackendDecorator("link", comm::kLayerLink,
                            [network](comm::BackendPtr inner, const comm::BackendContext& ctx) {
                              return std::make_shared<LinkBackend>(std::move(inner), network,
                                                                   ctx.globalRanks);
                            });
}

void installLinkEmulation(const LinkModel& model) {
  if (!model.enabled()) {
    comm::removeBackendDecorator("link");
    return;
  }
  comm::addBackendDecorator("link", comm::kLayerLink,
                            [model](comm::BackendPtr inner, const comm::BackendContext&) {
                              return std::make_shared<LinkBackend>(std::move(inner), model);
                            });
}

}  // namespace distlab::emulator
