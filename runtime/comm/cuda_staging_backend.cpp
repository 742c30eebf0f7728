// CUDA tensors on a host backend: Note [CUDA tensors on host backends].
#include "runtime/comm/cuda_staging_backend.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "runtime/comm/comm_trace.hpp"
#include "runtime/comm/forwarding_backend.hpp"
#include "runtime/comm/work_completion.hpp"
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
class StagedWork : public RelayedWork {
 public:
  StagedWork(WorkPtr inner, std::vector<Tensor> deviceOutputs)
      : RelayedWork(inner->info(), std::move(deviceOutputs), inner) {}

  bool wait(Milliseconds timeout) override {
    inner()->wait(timeout);  // helps run the host operation (Note [Waiting helps])
    return Work::wait(timeout);
  }
};

class CudaStagingBackend : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;

 protected:
  // Every tensor the operation reads is staged in (in-place operations read
  // and write the same stand-in), every tensor it writes is staged out.
  WorkPtr intercept(const Operation& op) override {
    auto plan = std::make_shared<StagingPlan>(traceOpName(op.type), pool_);
    std::vector<Tensor> inputs = plan->read({op.inputs.begin(), op.inputs.end()});
    std::vector<Tensor> outputs = plan->write({op.outputs.begin(), op.outputs.end()});
    std::vector<std::vector<Tensor>> outputLists;
    for (const auto& list : op.outputLists) outputLists.push_back(plan->write(list));
    Operation host = op;
    host.inputs = inputs;
    host.outputs = outputs;
    host.outputLists = outputLists;
    WorkPtr inner = forward(host);
    return finishWhenDone(std::move(inner), std::move(plan));
  }

 private:
  static WorkPtr finishWhenDone(WorkPtr inner, std::shared_ptr<StagingPlan> plan) {
    auto outer = std::make_shared<StagedWork>(inner, plan->deviceOutputs());
    // Holds the outer Work until the inner one completes (every Work does, by
    // its timeout at the latest): a caller may keep only the outer's Future.
    // The callback runs inside the inner Work's completion (or at once, while
    // `inner` is held here), so the raw pointer is alive whenever it runs.
    inner->getFuture()->addCallback([work = outer, plan, source = inner.get()](Future& f) {
      std::exception_ptr error = f.exception();
      WorkCompletion::setSourceRank(*work, source->sourceRank());  // recv from any source
      // The copy out writes the caller's tensors: inside the bracket, and not
      // at all once the outer Work failed (Note [Work failure and the
      // caller's tensors]). A failure arriving during the copy waits for it.
      if (!WorkCompletion::beginExecution(*work, [](std::exception_ptr) {})) return;
      if (!error) {
        try {
          plan->copyOut();
        } catch (...) {
          error = std::current_exception();
        }
      }
      WorkCompletion::endExecution(*work, error);
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
