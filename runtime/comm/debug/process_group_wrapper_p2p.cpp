// ProcessGroupWrapper: point-to-point pairing checks.
//
// Note [P2P pairing]
// Keys: "dbg/<group>/p/<src>-<dst>/<tag>/<k>/s" (the sender's fingerprint of
// its k-th send to dst with that tag) and ".../r" (the receiver's). Each side
// sets its key, then looks for the other's without waiting. If it is there the
// check runs on the calling thread (and throws before the inner backend sees
// the operation); otherwise the operation is issued, the caller gets an outer
// Work, and a checker thread polls (every kP2PPoll) until the other side shows
// up; the outer Work completes when that check passed and the backend's Work
// completed (with the backend's result or error).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "runtime/comm/debug/flight_recorder.hpp"
#include "runtime/comm/debug/liveness.hpp"
#include "runtime/comm/debug/process_group_wrapper.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm {
namespace {

constexpr std::chrono::milliseconds kP2PPoll{1};

int64_t numelOf(const CollectiveFingerprint& fp) {
  int64_t n = 1;
  for (int64_t d : fp.tensors.at(0).shape) n *= d;
  return n;
}

std::string sideName(const CollectiveFingerprint& fp, bool isSend, const RankNames& names) {
  return fmt::format("{} #{} {} {} (tag {})", isSend ? "send" : "recv", fp.seq,
                     isSend ? "to" : "from", names.name(fp.peer), fp.tag);
}

}  // namespace

std::string ProcessGroupWrapper::p2pKey(int src, int dst, int tag, uint64_t k,
                                        bool sendSide) const {
  return fmt::format("{}p/{}-{}/{}/{}/{}", keyBase_, src, dst, tag, k, sendSide ? "s" : "r");
}

std::string ProcessGroupWrapper::p2pMismatch(const CollectiveFingerprint& mine, bool isSend,
                                             const CollectiveFingerprint& theirs) const {
  std::string aspects;
  if (numelOf(mine) != numelOf(theirs)) {
    aspects += fmt::format("  Number of elements: {}vs {}", numelOf(mine), numelOf(theirs));
  }
  if (mine.tensors[0].dtype != theirs.tensors[0].dtype) {
    aspects += fmt::format("  Tensor Tensor dtypes: {}vs {}", dtypeName(mine.tensors[0].dtype),
                           dtypeName(theirs.tensors[0].dtype));
  }
  if (aspects.empty()) return "";
  return fmt::format(
      "Detected mismatch between point-to-point operations in group '{}'. {} is running {}: "
      "{}, but {} is running {}: {}. Point-to-point operations differ in the following "
      "aspects: {}",
      groupName_, names_.name(rank_, true), sideName(mine, isSend, names_), mine.toString(),
      names_.name(mine.peer, true), sideName(theirs, !isSend, names_), theirs.toString(),
      aspects);
}

WorkPtr ProcessGroupWrapper::checkedP2P(const Operation& op) {
  const bool isSend = op.type == OpType::kSend;
  const Tensor& tensor = isSend ? op.inputs.front() : op.outputs.front();
  const int peer = op.peer, tag = op.tag;
  const Milliseconds timeout = op.timeout;
  uint64_t k;
  {
    std::lock_guard<std::mutex> lock(p2pMutex_);
    k = ++(isSend ? sendCounts_ : recvCounts_)[{peer, tag}];
  }
  auto fp = CollectiveFingerprint::of(isSend ? OpType::kSend : OpType::kRecv, k, {tensor});
  fp.peer = peer;
  fp.tag = tag;
  const int src = isSend ? rank_ : peer, dst = isSend ? peer : rank_;
  store_->setString(p2pKey(src, dst, tag, k, isSend), fp.serialize());
  PendingP2P p{nullptr, nullptr, p2pKey(src, dst, tag, k, !isSend), fp, isSend, false,
               Clock::now() + timeout};
  if (store_->check({p.theirKey})) {
    auto theirs = CollectiveFingerprint::parse(store_->getString(p.theirKey));
    theirs.peer = rank_;
    const std::string text = p2pMismatch(fp, isSend, theirs);
    if (!text.empty()) {
      DL_LOG(ERROR, "{}", text);
      dumpFlightRecorders("mismatch", text, globalRanks_[rank_]);
      throw DistBackendError(text);
    }
    return forward(op);
  }
  p.inner = forward(op);
  p.outer = std::make_shared<RelayedWork>(p.inner->info(), std::vector<Tensor>{tensor}, p.inner);
  WorkPtr outer = p.outer;
  {
    std::lock_guard<std::mutex> lock(p2pMutex_);
    pending_.push_back(std::move(p));
    if (!checker_.joinable()) checker_ = std::thread([this] { checkerLoop(); });
  }
  p2pCv_.notify_all();
  return outer;
}

// Returns true when the entry is settled (its outer Work completed).
bool ProcessGroupWrapper::checkPending(PendingP2P& p) {
  if (p.inner->state() != WorkState::kScheduled) WorkCompletion::markStarted(*p.outer);
  if (!p.paired) {
    bool present = false;
    try {
      present = store_->check({p.theirKey});
    } catch (const std::exception&) {
    }
    if (present) {
      auto theirs = CollectiveFingerprint::parse(store_->getString(p.theirKey));
      theirs.peer = rank_;
      const std::string text = p2pMismatch(p.mine, p.isSend, theirs);
      if (!text.empty()) {
        DL_LOG(ERROR, "{}", text);
        dumpFlightRecorders("mismatch", text, globalRanks_[rank_]);
        // The caller learns it once the backend let go of the tensor: the
        // inner Work fails first (Note [Work failure and the caller's tensors]).
        p.failure = std::make_exception_ptr(DistBackendError(text));
        p.inner->abort(p.failure);
        inner()->abort(text);
      }
      p.paired = true;
    }
  }
  if (!p.inner->isCompleted()) return false;
  if (p.failure) {
    WorkCompletion::finish(*p.outer, p.failure);
    return true;
  }
  if (!p.paired && p.inner->isSuccess()) {  // wait for the peer's record, up to the timeout
    if (Clock::now() < p.deadline) return false;
    const std::string text = describeOne(p);
    WorkCompletion::finish(*p.outer, std::make_exception_ptr(DistTimeoutError(fmt::format(
        "[{}] {} completed in the backend, but its peer never posted the matching "
        "operation in time: {}",
        names_.name(rank_, true), sideName(p.mine, p.isSend, names_), text))));
    return true;
  }
  WorkCompletion::setSourceRank(*p.outer, p.inner->sourceRank());
  WorkCompletion::finish(*p.outer, p.inner->exception());
  return true;
}

void ProcessGroupWrapper::checkerLoop() {
  std::unique_lock<std::mutex> lock(p2pMutex_);
  while (!stopping_) {
    if (pending_.empty()) {
      p2pCv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      continue;
    }
    // Work on a copy so the watchdog's diagnosis always sees every entry.
    std::vector<PendingP2P> snapshot = pending_;
    lock.unlock();
    std::vector<const Work*> settled;
    for (auto& p : snapshot) {
      if (checkPending(p)) settled.push_back(p.outer.get());
    }
    lock.lock();
    for (auto& p : pending_) {
      for (const auto& q : snapshot) {
        if (q.outer == p.outer) p.paired = q.paired;
      }
    }
    std::erase_if(pending_, [&](const PendingP2P& p) {
      return std::find(settled.begin(), settled.end(), p.outer.get()) != settled.end();
    });
    if (!pending_.empty()) p2pCv_.wait_for(lock, kP2PPoll, [&] { return stopping_; });
  }
}

std::string ProcessGroupWrapper::describeOne(const PendingP2P& p) {
  const int peer = p.mine.peer;
  const uint64_t k = p.mine.seq;
  const int src = p.isSend ? rank_ : peer, dst = p.isSend ? peer : rank_;
  std::string posted = "has not posted any";
  if (k > 1 && store_->check({p2pKey(src, dst, p.mine.tag, k - 1, !p.isSend)})) {
    posted = fmt::format("has posted only {}", k - 1);
  } else if (k > 1) {
    posted = fmt::format("has posted fewer than {}", k - 1);
  }
  return fmt::format(
      "Unmatched point-to-point operation (DETAIL) on {} in group '{}': {} {} has no "
      "matching {}: {} {} {} with tag {} {} {}; {} is {}",
      names_.name(rank_), groupName_, sideName(p.mine, p.isSend, names_),
      shapeToString(p.mine.tensors[0].shape), p.isSend ? "recv" : "send", names_.name(peer),
      posted, p.isSend ? "recv(s)" : "send(s)", p.mine.tag, p.isSend ? "from" : "to",
      names_.name(rank_), names_.name(peer), probeRank(*store_, globalRanks_.at(peer)).detail);
}

std::string ProcessGroupWrapper::describeUnmatched() {
  std::vector<PendingP2P> snapshot;
  {
    std::lock_guard<std::mutex> lock(p2pMutex_);
    snapshot = pending_;
  }
  std::string out;
  for (const auto& p : snapshot) {
    if (p.outer->isCompleted() || store_->check({p.theirKey})) continue;
    out += (out.empty() ? "" : "\n") + describeOne(p);
  }
  return out;
}

}  // namespace distlab::comm
