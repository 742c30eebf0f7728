#pragma once
// NcclComm: one NCCL communicator, its CUDA device and the group's
// communication stream.
//
// Note [NCCL communicator set-up]
// Rank 0 of the group makes the unique id (ncclGetUniqueId) and publishes it
// in the group's store; every rank waits for it (bounded by the group's
// timeout) and joins with ncclCommInitRankConfig. The communicator is
// non-blocking (config.blocking = 0): set-up and every later NCCL call return
// at once, and NcclComm polls ncclCommGetAsyncError until the call is done or
// its deadline passes; on the deadline the communicator is aborted
// (ncclCommAbort), so no NCCL call can hang the caller. A subgroup's
// communicator comes from its parent's by ncclCommSplit when the parent has
// one (collective over the parent: every parent rank takes part, ranks
// outside the subgroup with NCCL_SPLIT_NOCOLOR).
//
// Thread-safety: calls are serialised by the backend's issue lock; abort()
// may come from any thread (the watchdog, the completion thread) and only
// flags the communicator and calls ncclCommAbort, which NCCL allows
// concurrently with a blocked call on another thread.
#include <nccl.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/comm/store/store.hpp"
#include "runtime/comm/types.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/tensor/cuda/cuda_runtime.hpp"

namespace distlab::comm::nccl_backend {

class NcclComm {
 public:
  // Collective over the group (Note [NCCL communicator set-up]). `key` is the
  // store key of the unique id; throws DistBackendError naming the group on an
  // NCCL error (e.g. two ranks on one device), DistTimeoutError on the deadline.
  static std::shared_ptr<NcclComm> create(Store& store, const std::string& key, int rank,
                                          int size, int device, Milliseconds timeout,
                                          const std::string& groupName);
  // ncclCommSplit of this communicator (collective over all its ranks);
  // color < 0 = NCCL_SPLIT_NOCOLOR: returns null.
  std::shared_ptr<NcclComm> split(int color, int key, Milliseconds timeout,
                                  const std::string& groupName);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t handle() const { return comm_; }
  int device() const { return device_; }
  const cuda::Stream& stream() const { return stream_; }
  const std::string& groupName() const { return groupName_; }

  // Completes a non-blocking NCCL call: `result` of the call, then polls the
  // communicator until it is no longer in progress or `deadline` passes
  // (then aborts and throws DistTimeoutError). Throws DistBackendError on error.
  void complete(ncclResult_t result, std::string_view what, const Deadline& deadline);
  // An asynchronous error of the communicator (a failed peer, an abort), or
  // nullopt while healthy.
  std::optional<std::string> asyncError() const;
  // ncclCommAbort once; later calls and destroy() return at once (Note [NCCL
  // abort may block]). Any thread.
  void abort();
  bool aborted() const { return aborted_.load(); }
  // ncclCommFinalize + ncclCommDestroy, bounded by `timeout` (abort when it
  // passes). Idempotent.
  void destroy(Milliseconds timeout);

 private:
  NcclComm(ncclComm_t comm, int device, cuda::Stream stream, std::string groupName);
  static cuda::Stream newStream(int device);

  ncclComm_t comm_;
  int device_;
  cuda::Stream stream_;
  std::string groupName_;
  mutable std::mutex lifecycleMutex_;  // abort vs destroy vs asyncError
  std::atomic<bool> aborted_{false};
  bool destroyed_ = false;  // GUARDED_BY(lifecycleMutex_)
};

using NcclCommPtr = std::shared_ptr<NcclComm>;

}  // namespace distlab::comm::nccl_backend
