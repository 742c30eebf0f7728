#include "emulator/link/link_backend.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <queue>
#include <thread>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/comm_trace.hpp"
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
// block: it only schedules).
class Relay : public comm::WorkObserver {
 public:
  Relay(WorkPtr outer, SteadyClock::time_point end) : outer_(std::move(outer)), end_(end) {}
  void onStarted(const comm::Work&) override { outer_->markStarted(); }
  void onCompleted(const comm::Work& inner) override {
    if (!inner.isSuccess()) {
      outer_->finish(inner.exception());
      return;
    }
    int source = inner.sourceRank();
    auto outer = outer_;
    scheduleAt(end_, [outer, source] {
      if (source >= 0) outer->setSourceRank(source);
      outer->finish();
    });
  }

 private:
  WorkPtr outer_;
  SteadyClock::time_point end_;
};

int64_t bytesOf(const std::vector<Tensor>& ts) {
  int64_t total = 0;
  for (const auto& t : ts) total += static_cast<int64_t>(t.nbytes());
  return total;
}
int64_t bytesOf(const Tensor& t) { return static_cast<int64_t>(t.nbytes()); }

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

WorkPtr LinkBackend::delay(WorkPtr inner, OpType op, int64_t bytes, std::vector<Tensor> outputs) {
  auto cost = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(model_.seconds(op, bytes, size())));
  SteadyClock::time_point start, end;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    start = std::max(SteadyClock::now(), linkFreeAt_);
    end = start + cost;
    linkFreeAt_ = end;
  }
  if (trace::enabled()) traceTransfer(inner->info(), start, end);
  auto outer = std::make_shared<comm::Work>(inner->info(), std::move(outputs));
  inner->addObserver(std::make_shared<Relay>(outer, end));
  return outer;
}

WorkPtr LinkBackend::broadcast(const Tensor& t, const comm::BroadcastOptions& o) {
  return delay(ForwardingBackend::broadcast(t, o), OpType::kBroadcast, bytesOf(t), {t});
}
WorkPtr LinkBackend::allreduce(const Tensor& t, const comm::AllreduceOptions& o) {
  return delay(ForwardingBackend::allreduce(t, o), OpType::kAllreduce, bytesOf(t), {t});
}
WorkPtr LinkBackend::allreduceCoalesced(const std::vector<Tensor>& ts,
                                        const comm::AllreduceCoalescedOptions& o) {
  return delay(ForwardingBackend::allreduceCoalesced(ts, o), OpType::kAllreduceCoalesced,
               bytesOf(ts), ts);
}
WorkPtr LinkBackend::reduce(const Tensor& t, const comm::ReduceOptions& o) {
  return delay(ForwardingBackend::reduce(t, o), OpType::kReduce, bytesOf(t), {t});
}
WorkPtr LinkBackend::allgather(const std::vector<Tensor>& outs, const Tensor& in,
                               const comm::AllgatherOptions& o) {
  return delay(ForwardingBackend::allgather(outs, in, o), OpType::kAllgather, bytesOf(outs),
               outs);
}
WorkPtr LinkBackend::allgatherIntoTensor(const Tensor& out, const Tensor& in,
                                         const comm::AllgatherOptions& o) {
  return delay(ForwardingBackend::allgatherIntoTensor(out, in, o), OpType::kAllgatherBase,
               bytesOf(out), {out});
}
WorkPtr LinkBackend::gather(const std::vector<Tensor>& outs, const Tensor& in,
                            const comm::GatherOptions& o) {
  return delay(ForwardingBackend::gather(outs, in, o), OpType::kGather, bytesOf(in) * size(),
               outs);
}
WorkPtr LinkBackend::scatter(const Tensor& out, const std::vector<Tensor>& ins,
                             const comm::ScatterOptions& o) {
  return delay(ForwardingBackend::scatter(out, ins, o), OpType::kScatter, bytesOf(out) * size(),
               {out});
}
WorkPtr LinkBackend::reduceScatter(const Tensor& out, const std::vector<Tensor>& ins,
                                   const comm::ReduceScatterOptions& o) {
  return delay(ForwardingBackend::reduceScatter(out, ins, o), OpType::kReduceScatter,
               bytesOf(ins), {out});
}
WorkPtr LinkBackend::reduceScatterTensor(const Tensor& out, const Tensor& in,
                                         const comm::ReduceScatterOptions& o) {
  return delay(ForwardingBackend::reduceScatterTensor(out, in, o), OpType::kReduceScatterBase,
               bytesOf(in), {out});
}
WorkPtr LinkBackend::alltoall(const std::vector<Tensor>& outs, const std::vector<Tensor>& ins,
                              const comm::AllToAllOptions& o) {
  return delay(ForwardingBackend::alltoall(outs, ins, o), OpType::kAlltoall, bytesOf(ins), outs);
}
WorkPtr LinkBackend::alltoallBase(const Tensor& out, const Tensor& in,
                                  const std::vector<int64_t>& outSplits,
                                  const std::vector<int64_t>& inSplits,
                                  const comm::AllToAllOptions& o) {
  return delay(ForwardingBackend::alltoallBase(out, in, outSplits, inSplits, o),
               OpType::kAlltoallBase, bytesOf(in), {out});
}
WorkPtr LinkBackend::barrier(const comm::BarrierOptions& o) {
  return delay(ForwardingBackend::barrier(o), OpType::kBarrier, 0, {});
}
WorkPtr LinkBackend::send(const Tensor& t, int dst, const comm::SendOptions& o) {
  return delay(ForwardingBackend::send(t, dst, o), OpType::kSend, bytesOf(t), {});
}
WorkPtr LinkBackend::recv(const Tensor& t, int src, const comm::RecvOptions& o) {
  return delay(ForwardingBackend::recv(t, src, o), OpType::kRecv, bytesOf(t), {t});
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
