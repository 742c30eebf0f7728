#pragma once
// NcclWork and the completion thread of the nccl backend.
//
// Note [NCCL Work]
// An NCCL operation is enqueued on the group's communication stream after a
// cross-stream wait for the caller's current stream (the inputs are ready
// there), and an end event is recorded behind it. The Work holds the event.
//   wait()  (default): makes the caller's current stream wait for the end
//           event and returns at once (PyTorch's ProcessGroupNCCL::Work::wait);
//           a Work already failed rethrows its error.
//   wait()  in blocking-wait mode (TORCH_NCCL_BLOCKING_WAIT=1, also
//           DISTLAB_NCCL_BLOCKING_WAIT, as read into BackendContext::env; the
//           backend option "nccl.blocking_wait" wins): waits on the host until the operation is
//           done or the timeout passes; a timeout aborts the communicator
//           (ncclCommAbort) and raises DistTimeoutError. barrier() always
//           waits on the host (PyTorch synchronises the device there).
// A completion thread per backend polls the end events (cudaEventQuery, every
// 0.2 ms while work is pending) and the communicator's asynchronous error,
// and finishes each Work in issue order: so isCompleted(), the flight
// recorder and the watchdog (WorkObserver) see NCCL work complete exactly as
// they see CPU backends' work. It also enforces the operation's timeout:
// past it the Work fails with DistTimeoutError and the communicator is
// aborted. Tensors the operation reads or writes (inputs, outputs, scratch)
// are kept alive by the thread until the end event is done, so the caching
// allocator cannot hand their blocks out while NCCL still uses them.
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/comm/failure_reason.hpp"
#include "runtime/comm/work.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/tensor/cuda/cuda_runtime.hpp"

namespace distlab::comm::nccl_backend {

class NcclWork : public Work {
 public:
  // `onTimeout` is called (once) when a blocking wait times out: it aborts
  // the communicator.
  NcclWork(WorkInfo info, std::vector<Tensor> outputs, cuda::Event end, int device,
           bool hostWait, std::function<void(const std::string&)> onTimeout);

  bool wait(Milliseconds timeout = kUnsetTimeout) override;
  const cuda::Event& endEvent() const { return end_; }

 private:
  cuda::Event end_;
  int device_;
  bool hostWait_;
  std::function<void(const std::string&)> onTimeout_;
};

// Finishes NcclWorks when their end event is done (Note [NCCL Work]).
class CompletionThread {
 public:
  // `checkHealth` returns the communicator's asynchronous error, if any. On a
  // failure, `markFailed` (the backend refuses new work) runs before the
  // failed Work finishes, so whoever sees the Work fail finds the group failed;
  // `abort` (the communicator) runs after, since it may take a while.
  CompletionThread(std::string groupName, std::function<std::optional<std::string>()> checkHealth,
                   std::function<void(const FailureReason&)> markFailed,
                   std::function<void(const std::string&)> abort);
  ~CompletionThread();
  CompletionThread(const CompletionThread&) = delete;
  CompletionThread& operator=(const CompletionThread&) = delete;

  // Watches `work` until its end event is done or its timeout passes;
  // `keep` stays alive until then.
  void add(std::shared_ptr<NcclWork> work, std::vector<Tensor> keep);
  // Fails every pending Work with DistBackendError(reason). Any thread.
  void failAll(const std::string& reason);
  // Waits (bounded) until nothing is pending; false when `timeout` passed.
  bool drain(Milliseconds timeout);
  void stop();

 private:
  struct Pending {
    std::shared_ptr<NcclWork> work;
    std::vector<Tensor> keep;
    Deadline deadline;
  };
  struct Outcome {
    std::exception_ptr error;  // null: success
    std::string timeout;       // non-empty: it timed out (the message)
  };
  void loop();
  bool pollOnce();  // true when something is still pending
  std::optional<Outcome> outcomeOf(const NcclWork& work, const Deadline& deadline);

  std::string groupName_;
  std::function<std::optional<std::string>()> checkHealth_;
  std::function<void(const FailureReason&)> markFailed_;
  std::function<void(const std::string&)> abort_;
  std::mutex mutex_;
  std::condition_variable cv_;       // work added / stop
  std::condition_variable drained_;  // pending_ became empty
  std::deque<Pending> pending_;      // GUARDED_BY(mutex_)
  bool stop_ = false;                // GUARDED_BY(mutex_)
  std::thread thread_;
};

}  // namespace distlab::comm::nccl_backend
