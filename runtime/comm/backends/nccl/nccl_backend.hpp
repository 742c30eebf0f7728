#pragma once
// NcclBackend ("nccl"): collectives and point-to-point between GPUs through
// NVIDIA's NCCL, for CUDA tensors (PyTorch's ProcessGroupNCCL). Built only
// when CUDA and NCCL are found (DISTLAB_HAVE_NCCL).
//
// Set-up (Note [NCCL communicator set-up], nccl_comm.hpp): the communicator
// is created lazily at the first operation, on the device of its tensors, or
// eagerly at construction when a device is given (option "nccl.device_id",
// PyTorch's init_process_group(device_id=...)). A subgroup made by
// ProcessGroup::split gets its communicator from its parent's by ncclCommSplit
// when the parent has one (Note [NCCL subgroups by split]).
//
// Streams and Work (Note [NCCL Work], nccl_work.hpp): one communication
// stream per group; each operation waits for the caller's current stream,
// runs on the communication stream and records an end event; Work::wait()
// makes the caller's stream wait for it (or, in blocking-wait mode, waits on
// the host with the timeout; a timeout aborts the communicator).
//
// How each operation maps onto NCCL:
//   broadcast, reduce, all_gather_into_tensor, reduce_scatter_tensor
//                            native ncclBroadcast/ncclReduce/ncclAllGather/ncclReduceScatter
//   allreduce                native ncclAllReduce; AVG = ncclAvg, PREMUL_SUM =
//                            ncclRedOpCreatePreMulSum; BAND/BOR/BXOR are refused
//   allreduce_coalesced      one ncclAllReduce per tensor in one NCCL group
//   allgather (list), allgather_coalesced
//                            one ncclBroadcast per (tensor, rank) in one group
//                            (per-rank sizes may differ)
//   reduce_scatter (list)    inputs packed on the stream, then ncclReduceScatter
//   gather, scatter, all_to_all, all_to_all_single
//                            ncclSend/ncclRecv pairs in one group (self included)
//   barrier                  a one-element allreduce; wait() blocks the host
//   send, recv               ncclSend / ncclRecv, each in its own NCCL group,
//                            on the group's communicator and stream: a pair's
//                            sends and recvs must be issued in matching order
//                            relative to each other and to the collectives
//   recv from any source     not supported (as PyTorch's NCCL backend)
//
// Tensors must be CUDA tensors on the group's device; a CPU tensor never
// reaches this backend (ProcessGroup: "no backend for device type cpu").
// Failures: an NCCL error or asynchronous error fails the operation with
// DistBackendError quoting NCCL; an operation past its timeout fails with
// DistTimeoutError and aborts the communicator; after either the backend
// refuses new work (errorReason()). abort() aborts the communicator.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/comm/backend.hpp"
#include "runtime/comm/backends/nccl/nccl_comm.hpp"
#include "runtime/comm/backends/nccl/nccl_work.hpp"

namespace distlab::comm {

// Registers "nccl" for device type cuda (listed in backends/nccl/sources.cmake).
void registerNcclBackend();

namespace nccl_backend {

// What an operation body gets: the communicator and stream, current for the
// call, and the deadline each NCCL call is completed against.
struct NcclCall {
  NcclComm& comm;
  Deadline deadline;
  std::vector<Tensor>& keep;  // scratch tensors to keep alive until the operation is done
  ncclComm_t handle() const { return comm.handle(); }
  cudaStream_t stream() const { return comm.stream().handle(); }
  // NcclComm::complete with this call's deadline.
  void check(ncclResult_t result, std::string_view what) const;
  // ncclGroupStart; body; ncclGroupEnd (completed).
  void grouped(const std::function<void()>& body) const;
};

class NcclBackend : public Backend {
 public:
  explicit NcclBackend(const BackendContext& context);
  ~NcclBackend() override;

  std::string name() const override { return "nccl"; }

  WorkPtr broadcast(const Tensor& tensor, const BroadcastOptions& opts) override;
  WorkPtr allreduce(const Tensor& tensor, const AllreduceOptions& opts) override;
  WorkPtr allreduceCoalesced(const std::vector<Tensor>& tensors,
                             const AllreduceCoalescedOptions& opts) override;
  WorkPtr reduce(const Tensor& tensor, const ReduceOptions& opts) override;
  WorkPtr allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                    const AllgatherOptions& opts) override;
  WorkPtr allgatherIntoTensor(const Tensor& output, const Tensor& input,
                              const AllgatherOptions& opts) override;
  WorkPtr allgatherCoalesced(const std::vector<std::vector<Tensor>>& outputLists,
                             const std::vector<Tensor>& inputs,
                             const AllgatherOptions& opts) override;
  WorkPtr gather(const std::vector<Tensor>& outputs, const Tensor& input,
                 const GatherOptions& opts) override;
  WorkPtr scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                  const ScatterOptions& opts) override;
  WorkPtr reduceScatter(const Tensor& output, const std::vector<Tensor>& inputs,
                        const ReduceScatterOptions& opts) override;
  WorkPtr reduceScatterTensor(const Tensor& output, const Tensor& input,
                              const ReduceScatterOptions& opts) override;
  WorkPtr alltoall(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                   const AllToAllOptions& opts) override;
  WorkPtr alltoallBase(const Tensor& output, const Tensor& input,
                       const std::vector<int64_t>& outputSplits,
                       const std::vector<int64_t>& inputSplits,
                       const AllToAllOptions& opts) override;
  WorkPtr barrier(const BarrierOptions& opts) override;
  WorkPtr send(const Tensor& tensor, int dstRank, const SendOptions& opts) override;
  WorkPtr recv(const Tensor& tensor, int srcRank, const RecvOptions& opts) override;

  void abort(const std::string& reason) override;
  void shutdown(Milliseconds timeout) override;
  std::optional<FailureReason> errorReason() const override;

  // The device the communicator is on; nullopt before the lazy set-up.
  std::optional<int> device() const;
  // Whether wait() blocks the host (Note [NCCL Work]).
  bool blockingWait() const { return blockingWait_; }
  // Note [NCCL subgroups by split]
  // ProcessGroup::split calls prepareSplit on every rank of this group. When
  // this group has a communicator already (eager set-up, or after its first
  // operation), every rank calls ncclCommSplit (ranks outside the subgroup
  // with NCCL_SPLIT_NOCOLOR) and the subgroup's communicator waits in a
  // process-wide table under (child group name, global rank) until the
  // subgroup's NcclBackend is constructed and takes it. Without a
  // communicator yet, the subgroup sets up its own through the store, lazily
  // (PyTorch splits only when the parent was bound to a device too).
  void prepareSplit(const std::string& childName, const std::vector<int>& ranks) override;
  // Whether this backend's communicator came from its parent's ncclCommSplit.
  bool fromSplit() const { return fromSplit_; }

 private:
  using Body = std::function<void(const NcclCall&)>;
  struct Launch {
    WorkInfo info;
    std::vector<Tensor> outputs;
    std::vector<Tensor> tensors;  // every tensor the operation touches (device check, kept alive)
    bool hostWait = false;
  };
  // Enqueues `body` on the communication stream (Note [NCCL Work]).
  WorkPtr launch(Launch op, const Body& body);
  NcclComm& ensureComm(int device);
  int deviceOf(const std::vector<Tensor>& tensors, const WorkInfo& info) const;
  WorkInfo info(OpType type, uint64_t seq, const std::vector<Tensor>& in,
                const std::vector<Tensor>& out, Milliseconds timeout, int peer = -1, int tag = 0,
                std::string_view redop = {}) const;
  WorkPtr failedWork(WorkInfo info, const FailureReason& why) const;
  void markFailed(const FailureReason& reason);
  void abortWith(const FailureReason& reason);

  BackendContext ctx_;
  bool blockingWait_ = false;
  std::optional<int> deviceId_;  // "nccl.device_id"
  mutable std::mutex commMutex_;
  NcclCommPtr comm_;  // GUARDED_BY(commMutex_)
  std::unique_ptr<CompletionThread> completion_;
  mutable std::mutex errorMutex_;
  std::optional<FailureReason> error_;  // GUARDED_BY(errorMutex_)
  std::atomic<bool> stopped_{false};
  bool fromSplit_ = false;
};

}  // namespace nccl_backend
}  // namespace distlab::comm
