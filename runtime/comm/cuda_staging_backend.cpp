// CUDA tensors on a host backend: Note [CUDA tensors on host backends].
#include "runtime/comm/cuda_staging_backend.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "runtime/comm/forwarding_backend.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/tensor/cuda/cuda_allocator.hpp"
#include "runtime/tensor/cuda/cuda_runtime.hpp"

namespace distlab::comm {
namespace {

// Pinned host tensors by (shape, dtype), reused across operations. Holds at
// most kMaxCachedBytes; a tensor given back beyond that is freed.
class PinnedPool {
 public:
  static constexpr size_t kMaxCachedBytes = size_t{512} << 20;

  Tensor take(const Shape& shape, DType dtype) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find({shape, dtype});
      if (it != free_.end() && !it->second.empty()) {
        Tensor t = std::move(it->second.back());
        it->second.pop_back();
        cachedBytes_ -= t.nbytes();
        return t;
      }
    }
    return cuda::pinnedEmpty(shape, dtype);
  }
  void give(Tensor t) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cachedBytes_ + t.nbytes() > kMaxCachedBytes) return;
    cachedBytes_ += t.nbytes();
    free_[{t.sizes(), t.dtype()}].push_back(std::move(t));
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<Shape, DType>, std::vector<Tensor>> free_;  // GUARDED_BY(mutex_)
  size_t cachedBytes_ = 0;                                       // GUARDED_BY(mutex_)
};

// One CUDA tensor an operation touches and its pinned stand-in.
struct Staged {
  Tensor device;
  Tensor host;
  bool read = false;
  bool written = false;
};

// The tensors of one operation: the host stand-ins it is issued with, the
// copies in and out (on a side stream of the tensors' device, waited for).
class StagingPlan {
 public:
  StagingPlan(std::string_view op, PinnedPool& pool) : op_(op), pool_(&pool) {}
  ~StagingPlan() {
    for (Staged& s : staged_) pool_->give(std::move(s.host));
  }
  StagingPlan(const StagingPlan&) = delete;
  StagingPlan& operator=(const StagingPlan&) = delete;

  Tensor read(const Tensor& t) { return stage(t, true, false); }
  Tensor write(const Tensor& t) { return stage(t, false, true); }
  Tensor readWrite(const Tensor& t) { return stage(t, true, true); }
  std::vector<Tensor> read(const std::vector<Tensor>& ts) { return each(ts, true, false); }
  std::vector<Tensor> write(const std::vector<Tensor>& ts) { return each(ts, false, true); }

  // The device tensors the operation writes (the Work's result), in order.
  std::vector<Tensor> deviceOutputs() const {
    std::vector<Tensor> out;
    for (const Staged& s : staged_) {
      if (s.written) out.push_back(s.device);
    }
    return out;
  }

  // Host -> device for what the operation wrote (on the completing thread).
  void copyOut() {
    if (device_ < 0) return;
    cuda::StreamGuard guard(*side_);
    for (Staged& s : staged_) {
      if (s.written) s.device.copy_(s.host);
    }
  }

 private:
  Tensor stage(const Tensor& t, bool read, bool written) {
    if (!t.defined()) return t;
    if (!t.device().isCuda()) {
      throw DistBackendError(fmt::format(
          "{}: the CUDA route of this group got a tensor on {}; pass CUDA tensors (or only "
          "CPU tensors, which the host backend takes directly)", op_, t.device().str()));
    }
    if (device_ >= 0 && t.device().index != device_) {
      throw DistBackendError(fmt::format("{}: tensors on cuda:{} and {} in one call; use one "
                                         "device per operation", op_, device_, t.device().str()));
    }
    if (device_ < 0) startSideStream(t.device().index);
    for (Staged& s : staged_) {
      if (s.device.isSame(t)) {  // in place: one stand-in, read and written
        if (read && !s.read) copyIn(s);
        s.read = s.read || read;
        s.written = s.written || written;
        return s.host;
      }
    }
    staged_.push_back({t, pool_->take(t.sizes(), t.dtype()), read, written});
    if (read) copyIn(staged_.back());
    return staged_.back().host;
  }

  // The side stream waits for the work enqueued so far on the caller's
  // current stream, so the copies below read what that work produced.
  void startSideStream(int device) {
    device_ = device;
    side_ = cuda::streamFromPool(device);
    cuda::Event ready;
    ready.record(cuda::currentStream(device));
    ready.block(*side_);
  }
  // Device -> host on the side stream; copy_ waits for it, so the host
  // operation, issued after the staging, reads the values.
  void copyIn(Staged& s) {
    cuda::StreamGuard guard(*side_);
    s.host.copy_(s.device);
  }
  std::vector<Tensor> each(const std::vector<Tensor>& ts, bool read, bool written) {
    std::vector<Tensor> out;
    for (const Tensor& t : ts) out.push_back(stage(t, read, written));
    return out;
  }

  std::string op_;
  PinnedPool* pool_;
  int device_ = -1;
  std::optional<cuda::Stream> side_;  // set with device_
  std::vector<Staged> staged_;
};

// The Work returned to the caller: completed once the host operation
// completed and its outputs are back on the device.
class StagedWork : public Work {
 public:
  StagedWork(WorkPtr inner, std::vector<Tensor> deviceOutputs)
      : Work(inner->info(), std::move(deviceOutputs)), inner_(std::move(inner)) {}

  bool wait(Milliseconds timeout) override {
    inner_->wait(timeout);  // helps run the host operation (Note [Waiting helps])
    return Work::wait(timeout);
  }
  void abort(const std::string& reason) override {
    inner_->abort(reason);
    Work::abort(reason);
  }

 private:
  WorkPtr inner_;
};

class CudaStagingBackend : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;

  WorkPtr broadcast(const Tensor& t, const BroadcastOptions& o) override {
    return staged("broadcast", [&](StagingPlan& p) {
      return inner()->broadcast(p.readWrite(t), o);
    });
  }
  WorkPtr allreduce(const Tensor& t, const AllreduceOptions& o) override {
    return staged("allreduce", [&](StagingPlan& p) {
      return inner()->allreduce(p.readWrite(t), o);
    });
  }
  WorkPtr allreduceCoalesced(const std::vector<Tensor>& ts,
                             const AllreduceCoalescedOptions& o) override {
    return staged("allreduce_coalesced", [&](StagingPlan& p) {
      std::vector<Tensor> host;
      for (const Tensor& t : ts) host.push_back(p.readWrite(t));
      return inner()->allreduceCoalesced(host, o);
    });
  }
  WorkPtr reduce(const Tensor& t, const ReduceOptions& o) override {
    return staged("reduce", [&](StagingPlan& p) { return inner()->reduce(p.readWrite(t), o); });
  }
  WorkPtr allgather(const std::vector<Tensor>& out, const Tensor& in,
                    const AllgatherOptions& o) override {
    return staged("allgather", [&](StagingPlan& p) {
      return inner()->allgather(p.write(out), p.read(in), o);
    });
  }
  WorkPtr allgatherIntoTensor(const Tensor& out, const Tensor& in,
                              const AllgatherOptions& o) override {
    return staged("all_gather_into_tensor", [&](StagingPlan& p) {
      return inner()->allgatherIntoTensor(p.write(out), p.read(in), o);
    });
  }
  WorkPtr allgatherCoalesced(const std::vector<std::vector<Tensor>>& outs,
                             const std::vector<Tensor>& ins, const AllgatherOptions& o) override {
    return staged("allgather_coalesced", [&](StagingPlan& p) {
      std::vector<std::vector<Tensor>> hostOuts;
      for (const auto& out : outs) hostOuts.push_back(p.write(out));
      return inner()->allgatherCoalesced(hostOuts, p.read(ins), o);
    });
  }
  WorkPtr gather(const std::vector<Tensor>& out, const Tensor& in,
                 const GatherOptions& o) override {
    return staged("gather", [&](StagingPlan& p) {
      return inner()->gather(p.write(out), p.read(in), o);
    });
  }
  WorkPtr scatter(const Tensor& out, const std::vector<Tensor>& in,
                  const ScatterOptions& o) override {
    return staged("scatter", [&](StagingPlan& p) {
      return inner()->scatter(p.write(out), p.read(in), o);
    });
  }
  WorkPtr reduceScatter(const Tensor& out, const std::vector<Tensor>& in,
                        const ReduceScatterOptions& o) override {
    return staged("reduce_scatter", [&](StagingPlan& p) {
      return inner()->reduceScatter(p.write(out), p.read(in), o);
    });
  }
  WorkPtr reduceScatterTensor(const Tensor& out, const Tensor& in,
                              const ReduceScatterOptions& o) override {
    return staged("reduce_scatter_tensor", [&](StagingPlan& p) {
      return inner()->reduceScatterTensor(p.write(out), p.read(in), o);
    });
  }
  WorkPtr alltoall(const std::vector<Tensor>& out, const std::vector<Tensor>& in,
                   const AllToAllOptions& o) override {
    return staged("all_to_all", [&](StagingPlan& p) {
      return inner()->alltoall(p.write(out), p.read(in), o);
    });
  }
  WorkPtr alltoallBase(const Tensor& out, const Tensor& in, const std::vector<int64_t>& outSplits,
                       const std::vector<int64_t>& inSplits, const AllToAllOptions& o) override {
    return staged("all_to_all_single", [&](StagingPlan& p) {
      return inner()->alltoallBase(p.write(out), p.read(in), outSplits, inSplits, o);
    });
  }
  WorkPtr send(const Tensor& t, int dst, const SendOptions& o) override {
    return staged("send", [&](StagingPlan& p) { return inner()->send(p.read(t), dst, o); });
  }
  WorkPtr recv(const Tensor& t, int src, const RecvOptions& o) override {
    return staged("recv", [&](StagingPlan& p) { return inner()->recv(p.write(t), src, o); });
  }
  WorkPtr recvAnysource(const Tensor& t, const RecvOptions& o) override {
    return staged("recv from any source", [&](StagingPlan& p) {
      return inner()->recvAnysource(p.write(t), o);
    });
  }

 private:
  // Stages, issues through `issue`, and completes the returned Work after the
  // outputs are back on the device (Note [CUDA tensors on host backends]).
  template <typename Issue>
  WorkPtr staged(std::string_view op, Issue&& issue) {
    auto plan = std::make_shared<StagingPlan>(op, pool_);
    WorkPtr inner = issue(*plan);  // the stand-ins are filled as the arguments are staged
    return finishWhenDone(std::move(inner), std::move(plan));
  }

  static WorkPtr finishWhenDone(WorkPtr inner, std::shared_ptr<StagingPlan> plan) {
    auto outer = std::make_shared<StagedWork>(inner, plan->deviceOutputs());
    // Holds the outer Work until the inner one completes (every Work does, by
    // its timeout at the latest): a caller may keep only the outer's Future.
    // The callback runs inside the inner Work's completion (or at once, while
    // `inner` is held here), so the raw pointer is alive whenever it runs.
    inner->getFuture()->addCallback([work = outer, plan, source = inner.get()](Future& f) {
      std::exception_ptr error = f.exception();
      work->setSourceRank(source->sourceRank());  // recv from any source
      if (!error) {
        try {
          plan->copyOut();
        } catch (...) {
          error = std::current_exception();
        }
      }
      work->finish(error);
    });
    return outer;
  }

  PinnedPool pool_;
};

}  // namespace

BackendPtr makeCudaStagingBackend(BackendPtr hostBackend) {
  return std::make_shared<CudaStagingBackend>(std::move(hostBackend));
}

}  // namespace distlab::comm
