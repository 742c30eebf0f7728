// ProcessGroupWrapper: construction and the collective checks.
#include "runtime/comm/debug/process_group_wrapper.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "runtime/comm/debug/flight_recorder.hpp"
#include "runtime/comm/debug/liveness.hpp"
#include "runtime/comm/debug/watchdog.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm {
namespace {

std::vector<int64_t> numels(std::span<const Tensor> ts) {
  std::vector<int64_t> out;
  for (const auto& t : ts) out.push_back(t.numel());
  return out;
}

int64_t rowNumel(const Tensor& t) {
  const Shape& s = t.sizes();
  return std::accumulate(s.begin() + (s.empty() ? 0 : 1), s.end(), int64_t{1},
                         std::multiplies<>());
}

std::vector<Tensor> concat(std::span<const Tensor> a, std::span<const Tensor> b) {
  std::vector<Tensor> out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// The tensors whose signatures a collective's fingerprint carries.
std::vector<Tensor> fingerprinted(const Operation& op) {
  switch (op.type) {
    case OpType::kAllgatherBase:
    case OpType::kReduceScatterBase:
      return concat(op.inputs, op.outputs);  // {in, out}
    case OpType::kReduceScatter:
      return concat(op.outputs, op.inputs);  // {out, ins...}
    case OpType::kScatter:
      return {op.outputs.begin(), op.outputs.end()};  // non-root ranks have no inputs
    default:
      return {op.inputs.begin(), op.inputs.end()};
  }
}

// Uneven all_gather / all_to_all are legal: their per-peer element counts are
// cross-checked between ranks instead of comparing shapes.
void addPeerCounts(const Operation& op, CollectiveFingerprint& fp) {
  fp.uniformShapes = false;
  switch (op.type) {
    case OpType::kAllgather:
      fp.sendCounts.assign(op.outputs.size(), op.inputs.front().numel());
      fp.recvCounts = numels(op.outputs);
      break;
    case OpType::kAllgatherCoalesced: {
      int64_t mine = 0;
      for (const auto& t : op.inputs) mine += t.numel();
      const size_t n = op.outputLists.empty() ? 0 : op.outputLists.front().size();
      fp.sendCounts.assign(n, mine);
      fp.recvCounts.assign(n, 0);
      for (const auto& list : op.outputLists) {
        for (size_t q = 0; q < list.size() && q < n; ++q) fp.recvCounts[q] += list[q].numel();
      }
      break;
    }
    case OpType::kAlltoall:
      fp.sendCounts = numels(op.inputs);
      fp.recvCounts = numels(op.outputs);
      break;
    case OpType::kAlltoallBase:
      for (int64_t s : op.inputSplits) fp.sendCounts.push_back(s * rowNumel(op.inputs.front()));
      for (int64_t s : op.outputSplits) fp.recvCounts.push_back(s * rowNumel(op.outputs.front()));
      break;
    default:
      fp.uniformShapes = true;
  }
}

CollectiveFingerprint fingerprintOf(const Operation& op) {
  auto fp = CollectiveFingerprint::of(op.type, op.seq, fingerprinted(op));
  if (hasReduceOp(op.type)) fp.reduceOp = std::string(reduceOpName(op.reduceOp));
  if (hasRoot(op.type)) fp.root = op.root;
  addPeerCounts(op, fp);
  return fp;
}

}  // namespace

ProcessGroupWrapper::ProcessGroupWrapper(BackendPtr inner, const BackendContext& ctx)
    : ForwardingBackend(std::move(inner)),
      store_(ctx.store),
      groupName_(ctx.groupName),
      keyBase_(fmt::format("dbg/{}/", ctx.groupName)),
      rank_(ctx.rank),
      globalRanks_(ctx.globalRanks),
      names_(ctx.groupName, ctx.globalRanks, ctx.size) {
  globalRanks_ = names_.globalRanks();
  helper_ = makeHelper(this->inner(), ctx);
  registerLiveness(store_, globalRanks_[rank_], ctx.size);
  setTimeoutDiagnoser(groupName_, globalRanks_[rank_], [this] { return describeUnmatched(); });
}

ProcessGroupWrapper::~ProcessGroupWrapper() {
  clearTimeoutDiagnoser(groupName_, globalRanks_[rank_]);
  {
    std::lock_guard<std::mutex> lock(p2pMutex_);
    stopping_ = true;
  }
  p2pCv_.notify_all();
  if (checker_.joinable()) checker_.join();
  unregisterLiveness(store_.get(), globalRanks_[rank_]);
}

std::string ProcessGroupWrapper::collectiveKey(uint64_t seq, int rank) const {
  return fmt::format("{}c/{}/{}", keyBase_, seq, rank);
}

// Note [Fingerprints compared as bytes]
// serialize() is deterministic and parse() inverts it, so a rank whose text is
// byte-for-byte this rank's own agrees on every field. When every rank sent
// the same text and the fingerprint carries no per-peer counts (which are
// cross-checked between ranks, not compared), the round passes without
// parsing anything; otherwise every text is parsed and compared field by
// field as before, so reports are unchanged.
void ProcessGroupWrapper::checkCollective(const CollectiveFingerprint& fp, Milliseconds timeout) {
  const std::string text = fp.serialize();
  ExchangeResult result = exchange(fp, text, timeout);
  // A missing rank may have failed the group in the inner backend first (a
  // mismatch found on shm's one-sided path: Note [Eager rooted operations]
  // in shm_eager.hpp): then the inner backend refuses the operation naming
  // that failure, which says more than who missed the barrier.
  if (!result.complete() && !errorReason()) throwBarrierFailure(fp, result, timeout);
  if (!result.complete()) return;
  if (result.uniform) {  // Note [Agreeing by hash]
    remember(fp.seq, std::move(result.values), true);
    return;
  }
  const bool noCounts = fp.sendCounts.empty() && fp.recvCounts.empty();
  if (noCounts && std::all_of(result.values.begin(), result.values.end(),
                              [&](const std::string& v) { return v == text; })) {
    remember(fp.seq, std::move(result.values));
    return;
  }
  remember(fp.seq, result.values);
  std::vector<CollectiveFingerprint> all;
  for (const auto& v : result.values) all.push_back(CollectiveFingerprint::parse(v));
  bool differ = !peerCountMismatches(all).empty();
  for (const auto& other : all) differ |= !fingerprintDifferences(fp, other).empty();
  if (differ) throwMismatch(all);
}

void ProcessGroupWrapper::forgetOld(uint64_t seq) {
  // Every rank has read round seq - 1 once round seq completed; keep some for history.
  const uint64_t keep = kHistory + 2;
  if (!canDelete_ || seq <= keep) return;
  try {
    store_->deleteKey(collectiveKey(seq - keep, rank_));
  } catch (const std::exception&) {
    canDelete_ = false;  // FileStore cannot delete keys
  }
}

std::string ProcessGroupWrapper::historyLine(int rank, const CollectiveFingerprint& current) {
  std::vector<std::string> parts;
  const uint64_t first = current.seq > kHistory ? current.seq - kHistory : 1;
  for (uint64_t s = first; s < current.seq; ++s) {
    if (auto text = pastFingerprint(s, rank)) {
      parts.push_back(CollectiveFingerprint::parse(*text).shortString());
    }
  }
  parts.push_back(current.shortString() + " <- failed here");
  return fmt::format("  {}: {}", names_.name(rank), fmt::join(parts, "; "));
}

void ProcessGroupWrapper::throwBarrierFailure(const CollectiveFingerprint& fp,
                                              const ExchangeResult& result,
                                              Milliseconds timeout) {
  std::vector<int> ranks;
  std::string lines;
  for (const auto& m : result.missing) {
    ranks.push_back(m.rank);
    lines += fmt::format("\n  {}: {}", names_.name(m.rank), m.liveness.detail);
    std::string last = "it has issued no collective in this group";
    for (uint64_t s = fp.seq - 1; s >= 1 && s + kHistory >= fp.seq; --s) {
      if (auto text = pastFingerprint(s, m.rank)) {
        last = "its last collective in this group: " +
               CollectiveFingerprint::parse(*text).shortString();
        break;
      }
    }
    lines += "; " + last;
  }
  const std::string text = fmt::format(
      "ProcessGroupWrapper: Monitored Barrier encountered error running collective: {}. "
      "Error: \n[{}]: {} failed to pass monitoredBarrier in {} ms (group '{}'){}\nCulprit "
      "rank(s): {} (did not reach collective {} in time)",
      fp.toString(), names_.name(rank_, true), names_.names(ranks, true), timeout.count(),
      groupName_, lines, names_.list(ranks), fp.seq);
  DL_LOG(ERROR, "{}", text);
  dumpFlightRecorders("mismatch", text, globalRanks_[rank_]);
  if (result.anyDead()) throw DistPeerFailureError(text);
  throw DistTimeoutError(text);
}

void ProcessGroupWrapper::throwMismatch(const std::vector<CollectiveFingerprint>& all) {
  const CollectiveFingerprint& mine = all[rank_];
  std::vector<int> culprits = fingerprintCulprits(all);
  const auto counts = peerCountMismatches(all);
  int other = -1;
  std::string aspects;
  const bool iAmCulprit = std::find(culprits.begin(), culprits.end(), rank_) != culprits.end();
  for (int r = 0; r < static_cast<int>(all.size()) && other < 0; ++r) {
    auto diffs = fingerprintDifferences(mine, all[r]);
    const bool relevant = culprits.empty() || iAmCulprit || culprits.front() == r;
    if (!diffs.empty() && relevant) {
      other = r;
      aspects = fmt::format("{}", fmt::join(diffs, ""));
    }
  }
  if (other < 0) {  // only the per-peer counts disagree
    const CountMismatch& c = counts.front();
    other = c.sender == rank_ ? c.receiver : c.sender;
    aspects = "  Split sizes: " + c.describe(&names_);
    std::map<int, int> involvement;
    for (const auto& m : counts) {
      ++involvement[m.sender];
      ++involvement[m.receiver];
    }
    int best = 0, bestCount = 0, ties = 0;
    for (auto [r, n] : involvement) {
      if (n > bestCount) {
        best = r, bestCount = n, ties = 0;
      } else if (n == bestCount) {
        ++ties;
      }
    }
    culprits.clear();
    if (ties == 0) culprits.push_back(best);
  }
  std::string text = fmt::format(
      "Detected mismatch between collectives on ranks. {} is running collective: {}, but "
      "{} is running collective: {}. Collectives differ in the following aspects: {}",
      names_.name(rank_, true), mine.toString(), names_.name(other, true),
      all[other].toString(), aspects);
  if (!culprits.empty()) {
    text += fmt::format("\nCulprit rank(s): {} (the other ranks of group '{}' agree)",
                        names_.list(culprits), groupName_);
  }
  std::vector<int> involved{rank_, other};
  for (int c : culprits) involved.push_back(c);
  std::sort(involved.begin(), involved.end());
  involved.erase(std::unique(involved.begin(), involved.end()), involved.end());
  text += fmt::format("\nRecent collectives in group '{}' (oldest first):", groupName_);
  for (int r : involved) text += "\n" + historyLine(r, all[r]);
  DL_LOG(ERROR, "{}", text);
  dumpFlightRecorders("mismatch", text, globalRanks_[rank_]);
  throw DistBackendError(text);
}

// ---- the collectives: build the fingerprint, check, forward --------------------------------

WorkPtr ProcessGroupWrapper::intercept(const Operation& op) {
  switch (op.type) {
    case OpType::kSend:
    case OpType::kRecv:
      return checkedP2P(op);
    case OpType::kRecvAnysource:
      return forward(op);  // not checked: the sender is known only once it arrives
    default:
      checkCollective(fingerprintOf(op), op.timeout);
      return forward(op);
  }
}

}  // namespace distlab::comm
