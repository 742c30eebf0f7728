#pragma once
// GlooBackend ("gloo"): collectives and point-to-point over TCP through
// Facebook's Gloo library (Debian libgloo-dev), the backend PyTorch users run
// on CPUs and across hosts.
//
// Rendezvous: each rank creates one TCP device per interface (gloo_device.hpp:
// GLOO_SOCKET_IFNAME, several interfaces round-robin, else the host's default
// address) and one Gloo context per device, connected as a full mesh through
// the group's store (GlooStoreAdapter, keys under `<storePrefix>gloo/<i>/`).
// Construction is collective and bounded by the group's timeout.
//
// Which operation is a native Gloo algorithm and which is composed:
//   operation                 how
//   broadcast                 native  gloo::broadcast
//   allreduce                 native  gloo::allreduce (ring / bcube, Gloo picks)
//   reduce                    native  gloo::reduce (on a scratch copy)
//   allgather (list)          native  gloo::allgatherv, then unpack per rank
//   gather                    native  gloo::gather, then unpack on root
//   scatter                   native  gloo::scatter
//   barrier                   native  gloo::barrier
//   all_to_all_single         native  gloo::alltoallv on the splits
//   send / recv / recv-any    native  Gloo unbound buffers (transport p2p)
//   allreduce_coalesced       composed  pack -> one gloo::allreduce -> unpack
//   all_gather_into_tensor    composed  gloo::allgather into the output tensor
//   allgather_coalesced       composed  pack -> gloo::allgatherv -> unpack
//   reduce_scatter (list)     composed  pack -> gloo::alltoall -> local reduce
//   reduce_scatter_tensor     composed  gloo::alltoall -> local reduce
//   all_to_all (list)         composed  pack -> gloo::alltoallv -> unpack
// (PyTorch's Gloo backend has no reduce_scatter, all_to_all or tensor forms;
// distlab offers them so every backend runs the same programs.)
// ReduceOps and dtypes: all of reduce_kernels.hpp. Gloo's reduce callbacks are
// type-erased, so distlab's kernels do the arithmetic; float16/bfloat16
// allreduce/reduce convert to float32 around the Gloo call (one rounding, as
// shm); AVG = SUM then divide by the group size; PREMUL_SUM scales each rank's
// input before a SUM.
//
// Threads: collectives run one at a time in issue order on a ProgressThread
// (inline for a blocking call on an idle queue). Collective i uses context
// i mod (number of interfaces). Point-to-point is posted at issue time on the
// caller's thread (it never waits behind a collective) from a private staging
// copy, and completed by a waiter thread (gloo_p2p.hpp). Sends are buffered: a
// send's Work completes once its data is staged; shutdown() waits (bounded) for
// buffered sends to be delivered.
//
// Failures: Note [Gloo peer failure] (gloo_peer_monitor.hpp).
//  - a collective past its timeout: DistTimeoutError naming group, seq, op;
//  - a peer that died: DistPeerFailureError naming the peer (group and global
//    rank), within the timeout; a peer that failed or shut down: DistNetworkError;
//  - after any collective failure the backend refuses new work (errorReason()).
//  - a point-to-point timeout fails only that operation (as shm), a dead peer
//    breaks the group.
// Process state: creating a backend sets SIGPIPE to "ignore" when it still has
// the default action (PyTorch runs under Python, which does the same), so a
// write to a dead peer fails the operation instead of killing the process.
// Options (BackendContext::options): "gloo.socket_ifname", "gloo.hostname"
// (gloo_device.hpp).
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <gloo/context.h>
#include <gloo/transport/device.h>

#include "runtime/comm/backend.hpp"
#include "runtime/comm/backends/gloo/gloo_algorithms.hpp"
#include "runtime/comm/backends/gloo/gloo_peer_monitor.hpp"
#include "runtime/comm/progress_thread.hpp"

namespace distlab::comm {

// Registers "gloo" (listed in backends/gloo/sources.cmake).
void registerGlooBackend();

namespace gloo_backend {

class GlooP2P;

class GlooBackend : public Backend {
 public:
  explicit GlooBackend(const BackendContext& context);
  ~GlooBackend() override;

  std::string name() const override { return "gloo"; }

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
  WorkPtr recvAnysource(const Tensor& tensor, const RecvOptions& opts) override;

  void abort(const std::string& reason) override;
  void announceTimeout(const std::string& reason) override;
  void abortAfterTimeout(const std::string& reason) override;
  void shutdown(Milliseconds timeout) override;
  std::optional<FailureReason> errorReason() const override;

  // Number of Gloo contexts (= interfaces used).
  size_t numContexts() const { return contexts_.size(); }

  // Turns what a Gloo call threw into the distlab error for `info` (used by the
  // collectives here and by GlooP2P).
  std::exception_ptr translate(std::exception_ptr error, const WorkInfo& info,
                               Clock::time_point started) const;
  // Records the failure (first one wins), publishes it to peers and breaks
  // the connections so peers blocked on this rank fail too.
  void markFailed(const FailureReason& reason);
  // The running collective's Work was failed from outside (its cancel
  // callback, called under the Work's lock): keeps why and interrupts the
  // Gloo algorithm, which then fails promptly.
  void cancel(std::exception_ptr why);
  // What cancel() kept for the collective that just ended (null: nothing), and forgets it.
  std::exception_ptr takeCancelError();
  // markFailed(why), then fails queued work and stops point-to-point traffic.
  void abortWith(const FailureReason& why);

 private:
  using Body = std::function<void(const GlooCall&)>;
  WorkPtr submit(WorkInfo info, std::vector<Tensor> outputs, bool asyncOp, Body body);
  WorkInfo info(OpType type, uint64_t seq, const std::vector<Tensor>& in,
                const std::vector<Tensor>& out, Milliseconds timeout, int peer = -1, int tag = 0,
                std::string_view redop = {}) const;
  // Runs `post` (which hands `work` to GlooP2P); a failure to post fails `work`.
  void postP2P(const WorkPtr& work, const std::function<void()>& post);
  void connect();
  void checkInterfaceCount();

  BackendContext ctx_;
  Scratch scratch_;  // used by the running collective only
  std::shared_ptr<BufferRegistry> buffers_ = std::make_shared<BufferRegistry>();
  std::vector<std::shared_ptr<::gloo::transport::Device>> devices_;  // tracked
  std::vector<std::shared_ptr<::gloo::Context>> contexts_;
  std::unique_ptr<PeerMonitor> monitor_;
  std::shared_ptr<ProgressThread> progress_;
  std::unique_ptr<GlooP2P> p2p_;
  mutable std::mutex errorMutex_;
  std::optional<FailureReason> error_;  // GUARDED_BY(errorMutex_)
  std::mutex cancelMutex_;
  std::exception_ptr cancelError_;  // GUARDED_BY(cancelMutex_)
  std::atomic<bool> stopped_{false};
};

}  // namespace gloo_backend
}  // namespace distlab::comm
