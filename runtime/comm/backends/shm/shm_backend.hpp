#pragma once
// ShmBackend ("shm"): collectives and point-to-point between ranks on one host
// through one shared-memory segment per group (the real data path for the
// emulator and tests; unlike PyTorch's "fake" backend it moves real data).
//
// Threads: collectives run in issue order on a ProgressThread (or inline for a
// blocking call with an idle queue); point-to-point runs on its own engine
// thread (Note [shm point-to-point]), so p2p never waits behind a collective.
// Data path and failure rules: Note [shm steps], Note [shm waiting],
// Note [shm segment lifecycle].
// A collective failed from outside while it runs (the watchdog's timeout,
// Work::abort) is cancelled: it stops before its next step, and the failure is
// published only after it let go of the caller's tensors (Note [Work failure
// and the caller's tensors] in work.hpp).
// After a collective fails (timeout, dead peer, mismatch, abort) the backend
// publishes the failure in the segment (peers fail fast with the same kind)
// and refuses new work; errorReason() says why. A p2p timeout or size mismatch
// fails only that operation (monitoredBarrier keeps collecting after one rank
// timed out); a dead p2p peer breaks the group.
//
// Options (BackendContext::options): the "shm.*" keys of shm_options.hpp. Segment
// size is about n x (2 x slot + n x channel).
// Creating the group takes one step (seq 0) before any operation: every rank
// publishes whether it may read its peers' memory.
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

#include "runtime/comm/backend.hpp"
#include "runtime/comm/backends/shm/shm_algorithm_selector.hpp"
#include "runtime/comm/backends/shm/shm_op.hpp"
#include "runtime/comm/backends/shm/shm_p2p.hpp"
#include "runtime/comm/backends/shm/shm_peers.hpp"
#include "runtime/comm/backends/shm/shm_segment.hpp"
#include "runtime/comm/backends/shm/shm_single_copy.hpp"
#include "runtime/comm/progress_thread.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::comm {

// Registers "shm" (listed in backends/shm/sources.cmake).
void registerShmBackend();

namespace shm {

// ShmBackend::submit's info source for an operation on one tensor that is
// both its input and its output: `make()` returns its WorkInfo without tensor
// metadata, which the Work takes from the tensor when asked (Note [Tensor
// metadata on demand] in work.hpp).
template <typename MakeInfo>
struct InPlace {
  MakeInfo make;
};
template <typename T>
inline constexpr bool kIsInPlace = false;
template <typename MakeInfo>
inline constexpr bool kIsInPlace<InPlace<MakeInfo>> = true;

class ShmBackend : public Backend {
 public:
  // Collective over the group: creates/attaches the segment (bounded by
  // context.timeout).
  explicit ShmBackend(const BackendContext& context);
  ~ShmBackend() override;

  std::string name() const override { return "shm"; }

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

  const ShmSegment& segment() const { return *segment_; }
  // Whether the group takes the single-copy path (Note [shm single copy]).
  bool singleCopy() const { return group_.singleCopy; }

 private:
  // Runs `body(args...)` (the operation's data path) for a new Work in issue
  // order: inline for a blocking call with an idle queue (Note [Unshared
  // execution] in work.hpp), else on the progress thread. The body is called
  // through a function pointer and becomes a Task only when it is queued (Note
  // [Per-operation cost] in work.hpp).
  // `info`: the WorkInfo, a callable that makes it, or an InPlace: a blocking
  // operation run inline then builds its Work while its peers' arrivals
  // travel (Note [Bookkeeping while the stamps travel] in shm_op.hpp).
  // `Outputs`: a std::vector<Tensor>, or one Tensor (Note [Per-operation cost]).
  // `args`: what the body reads (tensors, lists of them, splits), by
  // reference: run inline, the body gets the caller's own; queued, the task
  // keeps copies until it runs. So a blocking operation copies no list and
  // touches no tensor's reference count for its body.
  template <typename InfoSource, typename Outputs, typename Body, typename... Args>
  WorkPtr submit(InfoSource info, Outputs outputs, bool asyncOp, Body body, const Args&... args) {
    if (!asyncOp) {
      if (ProgressThread::InlineRun run = progress_->tryRunInline()) {
        WorkPtr work;
        auto makeWork = [&] { work = newWork(info, std::move(outputs), kScheduledAtStart); };
        auto bodyOnArgs = [&] { body(args...); };
        executeUnshared(work, deferred(makeWork), deferred(bodyOnArgs));
        return work;
      }
    }
    // Scheduled when queued: one clock read for the Work and the queue.
    const int64_t queuedNs = monotonicNowNs();
    WorkPtr work = newWork(info, std::move(outputs), queuedNs);
    auto task = [this, work, body = std::move(body), ... owned = args]() mutable {
      auto bodyOnArgs = [&] { body(owned...); };
      execute(*work, deferred(bodyOnArgs));
    };
    // Queued without an allocation (Note [Per-operation cost] in work.hpp), except
    // a closure that copies when moved (a body holding a list of tensors), which
    // InlineTask keeps on the heap.
    using Closure = decltype(task);
    static_assert(ProgressThread::Task::kFitsInline<Closure> ||
                      !std::is_nothrow_move_constructible_v<Closure>,
                  "a queued shm operation must not allocate: raise ProgressThread::Task's room");
    const uint64_t ticket = progress_->enqueue(std::move(task), queuedNs);
    WorkCompletion::setInlineRunner(*work, progress_, ticket);               // Note [Waiting helps]
    return work;
  }
  // The Work of `submit`, its WorkInfo built in place.
  template <typename InfoSource, typename Outputs>
  static WorkPtr newWork(InfoSource& info, Outputs&& outputs, int64_t scheduledNs) {
    if constexpr (kIsInPlace<InfoSource>) {
      return std::make_shared<Work>(kMetaFromOutput, info.make, std::move(outputs), scheduledNs);
    } else if constexpr (std::is_invocable_r_v<WorkInfo, InfoSource&>) {
      return std::make_shared<Work>(std::in_place, info, std::move(outputs), scheduledNs);
    } else {
      return std::make_shared<Work>(std::in_place, [&] { return std::move(info); },
                                    std::move(outputs), scheduledNs);
    }
  }
  // `fn`, called through a function pointer (no std::function, no allocation).
  template <typename Fn>
  static Deferred deferred(Fn& fn) {
    return {[](void* f) { (*static_cast<Fn*>(f))(); }, &fn};
  }
  // The task around a queued body: refuse after a failure, the execution
  // bracket, failure publication.
  void execute(Work& work, Deferred body);
  // The same for a body run at once on the issuing thread, before the Work
  // is shared (Note [Unshared execution] in work.hpp); `makeWork` sets `work`,
  // after this rank's first arrival when the body syncs (Note [Bookkeeping
  // while the stamps travel] in shm_op.hpp).
  void executeUnshared(WorkPtr& work, Deferred makeWork, Deferred body);
  // Fails `work` without running it when the backend failed earlier.
  bool refusedAfterFailure(Work& work);
  // Runs the body with the ops' deadline counted from `startedNs`; a failure
  // is published to the peers and returned.
  std::exception_ptr runBody(Deferred body, int64_t startedNs);
  // info() without tensor metadata, for an InPlace operation.
  WorkInfo infoInPlace(OpType type, uint64_t seq, Milliseconds timeout, int peer = -1,
                       std::string_view redop = {}) const;
  // `addr`: the buffer peers read on the single-copy path.
  OpDesc makeDesc(uint64_t seq, OpType type, DType dtype, ReduceOp op, int root, uint64_t bytes,
                  const void* addr = nullptr) const;
  // Note [shm single copy]: the group's first step publishes every rank's
  // verdict; sets group_.singleCopy (kOn: throws unless every rank may).
  void agreeOnSingleCopy(SingleCopyMode mode);
  // Whether an operation of `bytes` (counted the same on every rank) takes
  // the single-copy path.
  bool singleCopyFor(uint64_t bytes) const {
    return group_.singleCopy && bytes >= group_.singleCopyMinBytes;
  }
  // The same for the all-gathers (their own verdict, Note [shm single copy]).
  bool singleCopyAllgathersFor(uint64_t bytes) const {
    return group_.singleCopyAllgathers && bytes >= group_.singleCopyAllgathersMinBytes;
  }
  AllreduceAlgo allreduceAlgoFor(uint64_t bytes) const;
  // The data path of every gather-shaped op: outs[q] receives rank q's input
  // (inBytes each), through the slots or, with `inPlace` (decided alike on
  // every rank), by reading the peers' inputs in place. `root`: the rank
  // whose slot nobody reads (a gather's), -1 for the all-gathers.
  void gatherInto(ShmOp& op, const uint8_t* in, uint64_t inBytes,
                  std::span<uint8_t* const> outs, bool inPlace, int root = -1);
  // The body of all_to_all and all_to_all_single: `counts` holds what this
  // rank sends to each rank, then what it expects from each.
  void alltoallCounted(const OpDesc& desc, Milliseconds timeout,
                       std::span<const uint8_t* const> sends, std::span<uint8_t* const> recvs,
                       std::span<const uint64_t> counts);
  // The body of allgather and of each of allgather_coalesced's tensors.
  void allgatherInto(OpType type, const AllgatherOptions& opts, const Tensor& input,
                     const std::vector<Tensor>& outputs);
  void markFailed(std::exception_ptr error, FailureKind kind);
  // Fails the group with `error` (peers read `kind`), refuses queued work.
  void abortWith(std::exception_ptr error, FailureKind kind);
  // The WorkInfo of an operation on `in` and `out`; the operations pass it to
  // submit() as a callable, so that a blocking one builds it after arriving
  // (Note [Bookkeeping while the stamps travel] in shm_op.hpp).
  WorkInfo info(OpType type, uint64_t seq, std::span<const Tensor> in,
                std::span<const Tensor> out, Milliseconds timeout, int peer = -1, int tag = 0,
                std::string_view redop = {}) const;

  BackendContext ctx_;
  std::optional<AllreduceAlgo> forcedAllreduce_;  // shm.allreduce_algo other than auto
  std::unique_ptr<ShmSegment> segment_;
  std::unique_ptr<ShmPeers> peers_;
  std::atomic<bool> aborted_{false};
  ShmGroup group_;
  std::exception_ptr cancelError_;  // why group_.cancelled was set (collective thread reads)
  mutable std::mutex errorMutex_;
  std::optional<FailureReason> error_;  // GUARDED_BY(errorMutex_)
  std::atomic<bool> hasError_{false};  // error_ is set (read without the lock)
  std::shared_ptr<ProgressThread> progress_;
  std::unique_ptr<ShmP2P> p2p_;
};

}  // namespace shm
}  // namespace distlab::comm
