#pragma once
// Backend: the abstract implementer of collectives (c10d Backend). One virtual
// per operation; the defaults throw DistBackendError
//   "Backend <name> does not support <operation>"
// so a backend implements what it supports and the rest fail by name.
//
// Contracts for every implementation:
// - Ordering: every member of the group issues the same operations in the same
//   order (Note [Issue order] in process_group.hpp). Operations return a Work at
//   once; a CPU backend runs them on a progress thread in issue order.
// - Options arrive resolved: positive timeout, `seq` filled in, ranks are group
//   ranks already validated by ProcessGroup (in range). Backends still validate
//   what only they can see (peer sizes, dtypes they do not support).
// - Each operation fails its Work (never hangs) after opts.timeout with
//   DistTimeoutError, and with DistPeerFailureError when a needed peer died.
//   After a failure the backend refuses new work: errorReason() says why.
// - Thread-safety: operations may be issued from any thread, but the caller
//   must serialise issue (ProcessGroup does).
// - Tensors are handles; the caller keeps them alive and untouched until the
//   Work completes (the Work also holds the outputs).
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/comm/failure_reason.hpp"
#include "runtime/comm/store/store.hpp"
#include "runtime/comm/types.hpp"
#include "runtime/comm/work.hpp"
#include "runtime/core/runtime_env.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::comm {

// Everything a backend factory gets (c10d DistributedBackendOptions).
struct BackendContext {
  std::shared_ptr<Store> store;  // shared; prefix every key with storePrefix
  std::string storePrefix;       // unique per group (and per init), ends with '/'
  int rank = 0;                  // group rank
  int size = 1;                  // group size
  Milliseconds timeout = kDefaultProcessGroupTimeout;
  std::string groupName;         // unique per group, same on every member
  std::string groupDesc;         // free text ("default_pg", "dp", ...)
  std::vector<int> globalRanks;  // global rank of each group rank
  // Backend-specific settings ("shm.slot_bytes" = "1048576", ...); unknown keys
  // are ignored by backends that do not own them.
  std::map<std::string, std::string> options;
  // The environment as read for this group (Note [Environment read once] in
  // runtime_env.hpp): backends and decorators take their environment settings
  // from here. A context built by hand holds the defaults (nothing set).
  RuntimeEnv env;
};

class Backend : public std::enable_shared_from_this<Backend> {
 public:
  Backend(int rank, int size) : rank_(rank), size_(size) {}
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Registry name of the backend ("shm", "gloo", "nccl"); decorators return the
  // inner backend's name.
  virtual std::string name() const = 0;

  // ---- collectives (all tensors contiguous, on this backend's device) -------------
  // tensor has the same numel on every rank; root's data lands on all.
  virtual WorkPtr broadcast(const Tensor& tensor, const BroadcastOptions& opts);
  // In place; bitwise identical on all ranks afterwards.
  virtual WorkPtr allreduce(const Tensor& tensor, const AllreduceOptions& opts);
  virtual WorkPtr allreduceCoalesced(const std::vector<Tensor>& tensors,
                                     const AllreduceCoalescedOptions& opts);
  // In place on root; other ranks' tensors are left as they were.
  virtual WorkPtr reduce(const Tensor& tensor, const ReduceOptions& opts);
  // outputs[q] receives rank q's input; per-rank sizes may differ (outputs[q]
  // must match rank q's input numel and dtype).
  virtual WorkPtr allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                            const AllgatherOptions& opts);
  // output = cat (or stack) of every rank's equally sized input along dim 0;
  // output.numel() == size() * input.numel().
  virtual WorkPtr allgatherIntoTensor(const Tensor& output, const Tensor& input,
                                      const AllgatherOptions& opts);
  // outputLists[i][q] receives rank q's inputs[i].
  virtual WorkPtr allgatherCoalesced(const std::vector<std::vector<Tensor>>& outputLists,
                                     const std::vector<Tensor>& inputs,
                                     const AllgatherOptions& opts);
  // On root, outputs[q] receives rank q's input (all equal size); elsewhere
  // outputs must be empty.
  virtual WorkPtr gather(const std::vector<Tensor>& outputs, const Tensor& input,
                         const GatherOptions& opts);
  // On root, inputs[q] goes to rank q's output; elsewhere inputs must be empty.
  virtual WorkPtr scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                          const ScatterOptions& opts);
  // output on rank q = reduce over ranks of inputs[q].
  virtual WorkPtr reduceScatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                const ReduceScatterOptions& opts);
  // input.numel() == size() * output.numel(); chunk q of input goes to rank q.
  virtual WorkPtr reduceScatterTensor(const Tensor& output, const Tensor& input,
                                      const ReduceScatterOptions& opts);
  // outputs[q] receives rank q's inputs[me].
  virtual WorkPtr alltoall(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                           const AllToAllOptions& opts);
  // all_to_all_single: splits are in rows of dim 0 (resolved by ProcessGroup:
  // never empty here); outputSplits[q] == rank q's inputSplits[me].
  virtual WorkPtr alltoallBase(const Tensor& output, const Tensor& input,
                               const std::vector<int64_t>& outputSplits,
                               const std::vector<int64_t>& inputSplits,
                               const AllToAllOptions& opts);
  virtual WorkPtr barrier(const BarrierOptions& opts);

  // ---- point to point (peer = group rank; send to self allowed) -----------------
  virtual WorkPtr send(const Tensor& tensor, int dstRank, const SendOptions& opts);
  virtual WorkPtr recv(const Tensor& tensor, int srcRank, const RecvOptions& opts);
  // Work::sourceRank() tells the sender.
  virtual WorkPtr recvAnysource(const Tensor& tensor, const RecvOptions& opts);

  // ---- lifecycle ------------------------------------------------------------------
  // Fails queued and running work with DistBackendError(reason), refuses new work,
  // and tells peers (where the transport can). Returns promptly. Idempotent.
  virtual void abort(const std::string& reason);
  // Note [A peer's timeout is a timeout]
  // When rank A's watchdog times out a collective and aborts the group, the
  // peers waiting in the same collective may learn it from A (gloo's failure
  // record at once; shm's control block once A has exited) before their own
  // deadline, which is only the start skew away. Reporting that as a peer failure made the outcome depend on
  // scheduling (which rank's deadline came first). The abort therefore says
  // it was a timeout, and peers raise DistTimeoutError naming A and quoting
  // its watchdog message: the same class of error they would have raised
  // themselves a moment later. A peer that died or failed otherwise is still
  // a DistPeerFailureError / DistNetworkError / DistBackendError.
  //
  // The watchdog's three steps on a timeout, in this order:
  //   announceTimeout(reason)  tell peers (failure record / control block)
  //                            without touching the running operation;
  //   Work::abort(DistTimeoutError)   the rank's own error;
  //   abortAfterTimeout(reason)  abort(), with peers told it was a timeout.
  // Announcing first matters: once the work is finished the caller may end
  // the process before the abort runs, and peers would then see a silent
  // death instead of the timeout. Defaults: nothing; abort().
  virtual void announceTimeout(const std::string& reason);
  virtual void abortAfterTimeout(const std::string& reason);
  // Finishes queued work (bounded by `timeout`), then releases resources; new
  // work is refused afterwards. Idempotent.
  virtual void shutdown(Milliseconds timeout);
  // Why the backend refuses work (after a failure, abort or shutdown), with
  // its kind (Note [Failure kinds are values]); nullopt while healthy.
  virtual std::optional<FailureReason> errorReason() const;
  // Called by ProcessGroup::split on every member of this group, in the new
  // subgroup or not, in the same order, before the subgroup's backends are
  // created; `ranks` are the subgroup's ranks in this group (sorted). A
  // backend may derive the subgroup's resources from its own here,
  // collectively (nccl: ncclCommSplit). Default: nothing.
  virtual void prepareSplit(const std::string& childName, const std::vector<int>& ranks);

  // Throws DistBackendError "Backend <name> does not support <operation>".
  [[noreturn]] void throwUnsupported(std::string_view operation) const;

 private:
  int rank_;
  int size_;
};

using BackendPtr = std::shared_ptr<Backend>;

// Note [A refusal after a timeout is a timeout]
// After a watchdog timeout the group refuses the operations queued behind the
// one that timed out. Each of them would have timed out itself a moment
// later, so a caller waiting on one of those (DDP on a bucket issued after the
// hung collective) would see a timeout or a refusal depending on which came
// first, as in Note [A peer's timeout is a timeout]. So a refusal whose reason
// is of kind kTimeout is a DistTimeoutError; any other refusal is a
// DistBackendError. The message is the same either way:
// "<what>: group '<group>' refuses new work: <why.text>".
std::exception_ptr refusedWorkError(const std::string& what, const std::string& group,
                                    const FailureReason& why);
// The words every refusal carries, for readers of the text (the scenario
// runner's diagnosis: a refused call was issued by a rank the group had
// already given up on, not skipped).
inline constexpr const char* kRefusesNewWork = "refuses new work";

}  // namespace distlab::comm
