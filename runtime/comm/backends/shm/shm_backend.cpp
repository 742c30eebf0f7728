// ShmBackend: construction, the task wrapper, failure handling, lifecycle,
// registration. The operations are in shm_backend_ops.cpp.
#include "runtime/comm/backends/shm/shm_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/backends/shm/shm_options.hpp"
#include "runtime/comm/backends/shm/shm_wait.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm {

void registerShmBackend() {
  BackendInfo info = hostBackendInfo("shm", [](const BackendContext& ctx) -> BackendPtr {
    return std::make_shared<shm::ShmBackend>(ctx);
  });
  info.options = shm::shmOptionSpecs();
  // Small: n slots per step, no point-to-point traffic. A slot must also
  // leave every rank a 64-byte part (ShmSegment::open): past 512 ranks that
  // is more than 64 fingerprint slots.
  info.detailHelperOptions = [](int64_t slotBytes,
                                int groupSize) -> std::map<std::string, std::string> {
    const int64_t perRankParts = (64 * int64_t{groupSize} + 4095) / 4096 * 4096;
    return {{"shm.slot_bytes", std::to_string(std::max({int64_t{4096}, 64 * slotBytes,
                                                         perRankParts}))},
            {"shm.channel_bytes", "4096"}};
  };
  registerBackend(std::move(info));
}

namespace shm {
namespace {

// The control block's kind for a failure (Note [Failure kinds are values]).
FailureKind classify(std::exception_ptr e) {
  switch (failureKindOf(e)) {
    case FailureReason::kTimeout: return FailureKind::kTimeout;
    case FailureReason::kPeerFailure: return FailureKind::kPeerDied;
    case FailureReason::kAborted: return FailureKind::kAborted;
    case FailureReason::kBackendError: return FailureKind::kOther;
  }
  return FailureKind::kOther;
}

// And back: what errorReason() reports for a control-block kind.
FailureReason::Kind reasonKind(FailureKind kind) {
  switch (kind) {
    case FailureKind::kTimeout: return FailureReason::kTimeout;
    case FailureKind::kPeerDied: return FailureReason::kPeerFailure;
    case FailureKind::kAborted: return FailureReason::kAborted;
    default: return FailureReason::kBackendError;
  }
}

}  // namespace

ShmBackend::ShmBackend(const BackendContext& context)
    : Backend(context.rank, context.size), ctx_(context) {
  const ShmOptions options = parseShmOptions(ctx_.options);
  forcedAllreduce_ = options.forcedAllreduce;
  group_.singleCopyMinBytes = options.singleCopyMinBytes;
  segment_ = ShmSegment::open(*ctx_.store, ctx_.storePrefix, ctx_.rank, ctx_.size,
                             options.segment, ctx_.timeout);
  peers_ = std::make_unique<ShmPeers>(*segment_);
  group_.segment = segment_.get();
  group_.peers = peers_.get();
  group_.rank = ctx_.rank;
  group_.size = ctx_.size;
  group_.groupName = ctx_.groupName;
  group_.aborted = &aborted_;
  group_.wait = waitPolicyFor(ctx_.size);
  group_.eagerMaxBytes = segment_->hasEagerEntries() ? options.eagerBytes : 0;
  group_.eagerWritten.assign(static_cast<size_t>(ctx_.size), 0);
  group_.eagerMarksSeen.assign(static_cast<size_t>(ctx_.size), 0);
  agreeOnSingleCopy(options.singleCopy);
  progress_ = std::make_shared<ProgressThread>("shm:" + ctx_.groupName);
  p2p_ = std::make_unique<ShmP2P>(
      *segment_, *peers_, ctx_.groupName,
      [this](std::exception_ptr e, FailureKind kind) { markFailed(e, kind); }, group_.wait,
      everyRankMayRead(*segment_));
}

void ShmBackend::agreeOnSingleCopy(SingleCopyMode mode) {
  RankControl& me = segment_->control(ctx_.rank);
  const SingleCopyVerdicts mine =
      mode == SingleCopyMode::kOff
          ? SingleCopyVerdicts{kSingleCopyDisabled, kSingleCopyDisabled}
          : probePeerMemory(*segment_, *peers_, mode == SingleCopyMode::kAuto);
  me.singleCopyErr.store(mine.reductions, std::memory_order_release);
  me.singleCopyAllgathersErr.store(mine.allgathers, std::memory_order_release);
  {
    ShmOp op(group_, makeDesc(0, OpType::kBarrier, DType::kUInt8, {}, -1, 0), true, ctx_.timeout);
    op.sync();  // every verdict is published
  }
  const uint64_t option = group_.singleCopyMinBytes;
  const SingleCopyAgreement agreed = agreeOnVerdicts(*segment_, option, false);
  const SingleCopyAgreement allgathers = agreeOnVerdicts(*segment_, option, true);
  const int without = agreed.firstRankWithout;
  group_.singleCopy = without < 0;
  group_.singleCopyMinBytes = agreed.minBytes;
  group_.singleCopyAllgathers = allgathers.firstRankWithout < 0;
  group_.singleCopyAllgathersMinBytes = allgathers.minBytes;
  group_.singleCopyBroadcast = group_.singleCopy && mode == SingleCopyMode::kOn;
  if (mode == SingleCopyMode::kOn && without >= 0) {
    throw DistBackendError(fmt::format(
        "shm: option shm.single_copy=on, but rank {} of group '{}' cannot take the single-copy "
        "path ({}); use shm.single_copy=auto to fall back to the slots, or off",
        without, ctx_.groupName,
        singleCopyVerdictText(segment_->control(without).singleCopyErr.load())));
  }
  if (ctx_.rank != 0) return;  // the same decision on every rank: said once
  if (group_.singleCopyAllgathers && !group_.singleCopy) {
    DL_LOG(INFO, "shm: group '{}' all-gathers its peers' tensors in place from {} bytes; the "
                 "other operations go through the slots: rank {}: {}", ctx_.groupName,
           group_.singleCopyAllgathersMinBytes, without,
           singleCopyVerdictText(segment_->control(without).singleCopyErr.load()));
  } else if (group_.singleCopy) {
    DL_LOG(INFO, "shm: group '{}' reads its peers' tensors in place from {} bytes (all-gathers "
                 "from {}){}", ctx_.groupName, group_.singleCopyMinBytes,
           group_.singleCopyAllgathersMinBytes,
           group_.singleCopyBroadcast ? "" : " (broadcast through the slots)");
  } else {
    DL_LOG(INFO, "shm: group '{}' copies through the slots: rank {}: {}", ctx_.groupName, without,
           singleCopyVerdictText(segment_->control(without).singleCopyErr.load()));
  }
}

AllreduceAlgo ShmBackend::allreduceAlgoFor(uint64_t bytes) const {
  if (forcedAllreduce_) return *forcedAllreduce_;
  if (singleCopyFor(bytes)) return AllreduceAlgo::kSingleCopy;
  return selectAllreduce(bytes, size());
}

ShmBackend::~ShmBackend() {
  try {
    shutdown(Milliseconds(2000));
  } catch (...) {
  }
}

std::optional<FailureReason> ShmBackend::errorReason() const {
  if (!hasError_.load(std::memory_order_acquire)) {
    // Note [Eager rooted operations]: a peer found a mismatch this rank's
    // one-sided operations could not; the group's sequence is broken.
    const uint32_t found = segment_->header().oneSidedMismatchRank.load(std::memory_order_acquire);
    if (found == 0) return std::nullopt;  // every healthy op
    const RankControl& c = segment_->control(static_cast<int>(found - 1));
    return FailureReason{FailureReason::kBackendError,
                         fmt::format("rank {} failed: {}", found - 1,
                                     std::string(c.reason, strnlen(c.reason, sizeof(c.reason))))};
  }
  std::lock_guard<std::mutex> lock(errorMutex_);
  return error_;
}

void ShmBackend::markFailed(std::exception_ptr error, FailureKind kind) {
  const std::string why = failureReasonOf(error).text;
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (error_) return;
    error_ = FailureReason{reasonKind(kind), why};
    hasError_.store(true, std::memory_order_release);
  }
  RankControl& me = segment_->control(ctx_.rank);
  if (me.failed.load(std::memory_order_acquire) == 0) {
    std::strncpy(me.reason, why.c_str(), sizeof(me.reason) - 1);
    me.failed.store(static_cast<uint32_t>(kind), std::memory_order_release);
  }
  if (group_.oneSidedMismatch.exchange(false, std::memory_order_relaxed)) {
    uint32_t none = 0;
    segment_->header().oneSidedMismatchRank.compare_exchange_strong(
        none, static_cast<uint32_t>(ctx_.rank) + 1, std::memory_order_acq_rel);
  }
  ring(segment_->header().collBell, segment_->header().collSleepers);
  if (p2p_) p2p_->failAll("the group failed earlier: " + why);
}

WorkInfo ShmBackend::info(OpType type, uint64_t seq, std::span<const Tensor> in,
                          std::span<const Tensor> out, Milliseconds timeout, int peer, int tag,
                          std::string_view redop) const {
  return makeWorkInfo(ctx_.groupName, ctx_.rank, type, seq, in, out, timeout, peer, tag,
                      redop);
}

OpDesc ShmBackend::makeDesc(uint64_t seq, OpType type, DType dtype, ReduceOp op, int root,
                            uint64_t bytes, const void* addr) const {
  OpDesc d;
  d.seq = seq;
  d.opType = static_cast<uint8_t>(type);
  d.dtype = static_cast<uint8_t>(dtype);
  d.reduceOp = static_cast<uint8_t>(op.kind);
  d.root = root;
  d.bytes = bytes;
  d.hasCounts = 0;
  d.singleCopy.scalar = op.scalar;
  d.singleCopy.addr = reinterpret_cast<uintptr_t>(addr);
  d.stamp = 0;  // never published from here (Note [Arrival in the descriptor line])
  return d;
}

WorkInfo ShmBackend::infoInPlace(OpType type, uint64_t seq, Milliseconds timeout, int peer,
                                 std::string_view redop) const {
  return makeWorkInfo(ctx_.groupName, ctx_.rank, type, seq, std::span<const Tensor>(),
                      std::span<const Tensor>(), timeout, peer, 0, redop);
}

bool ShmBackend::refusedAfterFailure(Work& work) {
  auto why = errorReason();
  if (!why) return false;
  WorkCompletion::finish(work, refusedWorkError(work.info().describe(), ctx_.groupName, *why));
  return true;
}

void ShmBackend::execute(Work& work, Deferred body) {
  if (refusedAfterFailure(work)) return;
  // Note [Work failure and the caller's tensors]: a failure from outside
  // (watchdog, Work::abort) cancels the op and is published after it let go.
  group_.cancelled.store(false, std::memory_order_release);
  const int64_t startedNs = monotonicNowNs();  // the Work's start and the ops' deadlines
  const bool started = WorkCompletion::beginExecution(work, 
      [this](std::exception_ptr why) {
        cancelError_ = std::move(why);  // published by the release store below
        group_.cancelled.store(true, std::memory_order_release);
        ring(segment_->header().collBell, segment_->header().collSleepers);
      },
      startedNs);
  if (!started) return;  // failed while queued: never touch its tensors
  WorkCompletion::endExecution(work, runBody(body, startedNs));
}

void ShmBackend::executeUnshared(WorkPtr& work, Deferred makeWork, Deferred body) {
  if (errorReason()) {  // failures are never undone: refusedAfterFailure sees it too
    makeWork();
    refusedAfterFailure(*work);
    return;
  }
  group_.cancelled.store(false, std::memory_order_release);
  const int64_t startedNs = monotonicNowNs();
  group_.afterArrival = makeWork;
  const std::exception_ptr error = runBody(body, startedNs);
  group_.afterArrival = {};
  if (!work) makeWork();  // the body never arrived (or building the Work there failed)
  WorkCompletion::startUnshared(*work, startedNs);
  WorkCompletion::finishUnshared(*work, error);
}

std::exception_ptr ShmBackend::runBody(Deferred body, int64_t startedNs) {
  std::exception_ptr error;
  group_.opStartedNs = startedNs;
  try {
    body();
  } catch (...) {
    error = std::current_exception();
    // Peers see the failure that cancelled the op (e.g. the watchdog's timeout).
    const auto published =
        group_.cancelled.load(std::memory_order_acquire) ? cancelError_ : error;
    markFailed(published, aborted_.load() ? FailureKind::kAborted : classify(published));
  }
  group_.opStartedNs = 0;
  return error;
}

void ShmBackend::abort(const std::string& reason) {
  abortWith(std::make_exception_ptr(DistBackendError(FailureReason::aborted(reason).text)),
            FailureKind::kAborted);
}

// Note [A peer's timeout is a timeout]: peers read kTimeout from this rank's
// control block and throw DistTimeoutError (throwPeerFailure).
void ShmBackend::abortAfterTimeout(const std::string& reason) {
  abortWith(std::make_exception_ptr(DistTimeoutError(FailureReason::timedOut(reason).text)),
            FailureKind::kTimeout);
}

// Peers read this rank's control block in their waits; this rank's own wait
// never looks at it, so the running operation is left to the watchdog.
void ShmBackend::announceTimeout(const std::string& reason) {
  const std::string why = FailureReason::timedOut(reason).text;
  RankControl& me = segment_->control(ctx_.rank);
  if (me.failed.load(std::memory_order_acquire) == 0) {
    std::strncpy(me.reason, why.c_str(), sizeof(me.reason) - 1);
    me.failed.store(static_cast<uint32_t>(FailureKind::kTimeout), std::memory_order_release);
  }
  ring(segment_->header().collBell, segment_->header().collSleepers);
}

void ShmBackend::abortWith(std::exception_ptr error, FailureKind kind) {
  aborted_.store(true, std::memory_order_release);
  markFailed(std::move(error), kind);
  progress_->dropQueued([](ProgressThread::Task& task) { task(); });
}

void ShmBackend::shutdown(Milliseconds timeout) {
  if (!progress_) return;
  progress_->drain(timeout);
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (!error_) error_ = FailureReason::shutDown();
    hasError_.store(true, std::memory_order_release);
  }
  aborted_.store(true, std::memory_order_release);
  ring(segment_->header().collBell, segment_->header().collSleepers);
  progress_->dropQueued([](ProgressThread::Task& task) { task(); });
  progress_->stop();
  p2p_->stop();
}

}  // namespace shm
}  // namespace distlab::comm
