// ProcessGroupWrapper: how fingerprints travel (Note [DETAIL through the backend]).
#include <fmt/format.h>

#include <cstring>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/debug/process_group_wrapper.hpp"
#include "runtime/comm/rank_errors.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {
namespace {

// One rank's slot in the helper all-gather: a 4-byte length, then the
// fingerprint text. Longer texts (alltoall counts of large groups, long
// coalesced lists) travel through the store; the length says so.
constexpr int64_t kSlotBytes = 512;
constexpr uint32_t kInStoreFlag = 0x80000000u;

// FNV-1a, 64 bits: the same on every rank whatever binary it runs.
int64_t fingerprintHash(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>(h >> 1);  // non-negative, so -h cannot overflow
}

}  // namespace

// Note [Agreeing by hash]
// Almost every round matches, and gathering every rank's 512-byte slot costs
// each rank n slots: n^2 bytes a round in all, which at a thousand ranks
// took ~0.5 s per collective on two cores. So a round without per-peer
// counts first agrees on a hash of the text: one all_reduce (MIN) of
// (hash, -hash) through the helper; when the smallest and the largest hash
// are equal every rank sent this rank's text (a 64-bit collision aside), and
// the round passes with nothing gathered. Otherwise, or when any rank's
// fingerprint has per-peer counts (which are cross-checked, not compared),
// the texts are gathered as before, so reports are unchanged. Whether to
// gather must be the same on every rank (the helper's operations must
// match), so the all_reduce carries -hasCounts too: its minimum says whether
// any rank has counts. A rank that does not come fails the all_reduce the way
// it fails the all-gather, naming the same ranks.
std::optional<ExchangeResult> ProcessGroupWrapper::agreeByHash(Backend& helper,
                                                               const CollectiveFingerprint& fp,
                                                               const std::string& text,
                                                               Milliseconds timeout) {
  Tensor bounds = empty({3}, TensorOptions{DType::kInt64});
  const int64_t h = fingerprintHash(text);
  bounds.data<int64_t>()[0] = h;
  bounds.data<int64_t>()[1] = -h;
  bounds.data<int64_t>()[2] = fp.sendCounts.empty() && fp.recvCounts.empty() ? 0 : -1;
  AllreduceOptions opts;
  opts.reduceOp = ReduceOp::kMin;
  opts.seq = ++helperSeq_;
  opts.timeout = timeout;
  opts.asyncOp = false;
  try {
    helper.allreduce(bounds, opts)->wait();
  } catch (const DistRanksTimeoutError& e) {
    return missingResult(e.missingRanks(), false);
  } catch (const DistRanksPeerFailureError& e) {
    return missingResult(e.missingRanks(), true);
  }
  const int64_t* agreed = bounds.data<int64_t>();
  if (agreed[0] != -agreed[1] || agreed[2] != 0) return std::nullopt;
  ExchangeResult same;
  same.values = {text};
  same.uniform = true;
  return same;
}

BackendPtr ProcessGroupWrapper::makeHelper(const BackendPtr& inner, const BackendContext& ctx) {
  // DISTLAB_DETAIL_EXCHANGE, as read for the group (BackendContext::env).
  if (ctx.size < 2 || ctx.env.detailExchange == DetailExchange::kStore ||
      !isBackendRegistered(inner->name())) {
    return nullptr;
  }
  const BackendInfo& info = lookupBackend(inner->name());
  if (!info.detailHelperOptions) return nullptr;
  BackendContext h = ctx;
  h.storePrefix = ctx.storePrefix + "detail/";
  h.groupName = ctx.groupName + "/detail";
  h.options = info.detailHelperOptions(kSlotBytes, ctx.size);
  return createBackend(info.name, h);
}

ExchangeResult ProcessGroupWrapper::exchange(const CollectiveFingerprint& fp,
                                             const std::string& text, Milliseconds timeout) {
  const BackendPtr helper = this->helper();
  if (!helper) {
    ExchangeSpec spec{fmt::format("{}c/{}/", keyBase_, fp.seq), rank_, globalRanks_, true};
    ExchangeResult result = exchangeValues(*store_, spec, text, Deadline::after(timeout));
    if (result.complete()) forgetOld(fp.seq);
    return result;
  }
  if (auto agreed = agreeByHash(*helper, fp, text, timeout)) return *agreed;
  const int n = static_cast<int>(globalRanks_.size());
  // The slots are reused from round to round (collectives are issued one at a
  // time); a reader reads only the length its header gives.
  std::lock_guard<std::mutex> slots(slotMutex_);
  if (!slotMine_.defined()) {
    slotMine_ = zeros({kSlotBytes}, TensorOptions{DType::kUInt8});
    slotAll_ = empty({n * kSlotBytes}, TensorOptions{DType::kUInt8});
  }
  const Tensor& mine = slotMine_;
  const Tensor& all = slotAll_;
  const bool inStore = text.size() > static_cast<size_t>(kSlotBytes) - 4;
  const uint32_t header = static_cast<uint32_t>(text.size()) | (inStore ? kInStoreFlag : 0);
  std::memcpy(mine.rawData(), &header, 4);
  if (inStore) {
    store_->setString(collectiveKey(fp.seq, rank_), text);
    forgetOld(fp.seq);
  } else {
    std::memcpy(static_cast<uint8_t*>(mine.rawData()) + 4, text.data(), text.size());
  }
  AllgatherOptions opts;
  opts.seq = ++helperSeq_;
  opts.timeout = timeout;
  opts.asyncOp = false;
  ExchangeResult result;
  try {
    helper->allgatherIntoTensor(all, mine, opts)->wait();
  } catch (const DistRanksTimeoutError& e) {
    return missingResult(e.missingRanks(), false);
  } catch (const DistRanksPeerFailureError& e) {
    return missingResult(e.missingRanks(), true);
  }
  const auto* bytes = static_cast<const uint8_t*>(all.rawData());
  for (int r = 0; r < n; ++r) {
    uint32_t h = 0;
    std::memcpy(&h, bytes + r * kSlotBytes, 4);
    const uint32_t length = h & ~kInStoreFlag;
    if ((h & kInStoreFlag) != 0) {
      result.values.push_back(store_->getString(collectiveKey(fp.seq, r)));
    } else if (length <= kSlotBytes - 4) {
      result.values.emplace_back(reinterpret_cast<const char*>(bytes + r * kSlotBytes + 4), length);
    } else {
      throw DistBackendError(fmt::format(
          "ProcessGroupWrapper: rank {} sent a malformed fingerprint header ({} bytes) for "
          "collective {} of group '{}'",
          r, length, fp.seq, groupName_));
    }
  }
  return result;
}

// The helper group broke (a rank never came, or died): report like the store
// exchange does, and use the store from now on (the helper refuses new work).
ExchangeResult ProcessGroupWrapper::missingResult(const std::vector<int>& ranks, bool peerDied) {
  ExchangeResult result;
  result.peerDied = peerDied;
  for (int r : ranks) result.missing.push_back({r, probeRank(*store_, globalRanks_[r])});
  std::lock_guard<std::mutex> lock(helperMutex_);
  helper_.reset();
  return result;
}

BackendPtr ProcessGroupWrapper::helper() const {
  std::lock_guard<std::mutex> lock(helperMutex_);
  return helper_;
}

void ProcessGroupWrapper::abort(const std::string& reason) {
  if (auto h = helper()) h->abort(reason);
  ForwardingBackend::abort(reason);
}

void ProcessGroupWrapper::shutdown(Milliseconds timeout) {
  if (auto h = helper()) h->shutdown(timeout);
  ForwardingBackend::shutdown(timeout);
}

void ProcessGroupWrapper::remember(uint64_t seq, std::vector<std::string> values, bool uniform) {
  recent_.push_back({seq, std::move(values), uniform});
  while (recent_.size() > static_cast<size_t>(kHistory) + 2) recent_.pop_front();
}

std::optional<std::string> ProcessGroupWrapper::pastFingerprint(uint64_t seq, int rank) const {
  for (const Round& r : recent_) {
    if (r.seq != seq) continue;
    if (r.uniform) return r.values.front();
    if (rank < static_cast<int>(r.values.size())) return r.values[rank];
  }
  return std::nullopt;
}

}  // namespace distlab::comm
