#pragma once
// ProcessGroupWrapper: the TORCH_DISTRIBUTED_DEBUG=DETAIL decorator
// (kLayerDebug, outermost), wrapping every group's backends
// (docs/pytorch-semantics.md, "DETAIL checks" and "Debug levels and logging").
//
// Before each collective, on the calling thread, it exchanges this rank's
// CollectiveFingerprint with every other rank (Note [DETAIL through the
// backend]): a monitored barrier and the fingerprint all-gather in one round.
// Then:
// - a rank that does not arrive within the operation's timeout fails the call
//   on every arrived rank with DistTimeoutError (DistPeerFailureError when the
//   missing rank is dead, reported as soon as it is seen dead):
//     "ProcessGroupWrapper: Monitored Barrier encountered error running
//     collective: <fingerprint>. Error: \n[Rank 0]: Rank 1 failed to pass
//     monitoredBarrier in 1000 ms\n  rank 1: alive (pid ...) ..."
//   with the missing rank's last collective in the group, and "Culprit
//   rank(s): 1 (did not reach collective <seq> in time)";
// - fingerprints that differ (Note [Fingerprint checks]) fail the call on
//   every rank with DistBackendError:
//     "Detected mismatch between collectives on ranks. Rank 0 is running
//     collective: CollectiveFingerPrint(...), but Rank 1 is running collective:
//     CollectiveFingerPrint(...). Collectives differ in the following aspects:
//       Tensor Tensor shapes: [10]vs [20]"
//   followed by "Culprit rank(s): ..." when a strict majority agrees, and the
//   last kHistory collectives of each involved rank.
// Ranks are named as in Note [Naming ranks]: in a subgroup "Rank 1 of group
// 'g1' (global rank 3)", and the culprit line carries the global ranks.
// The inner backend is not called when a check fails, so the group stays
// usable. The flight recorder is dumped (trigger "mismatch").
//
// Point-to-point (Note [P2P pairing]): send #k from a to b with tag t must
// pair with recv #k from a on b with tag t (numbered per peer and tag, so
// tags used out of order are fine); dtype and element count must agree. Each
// side publishes its fingerprint without waiting (isend/irecv never block on
// the peer). The side that arrives second compares at once and throws; the
// first side gets a Work that completes only when the backend's Work has
// completed AND the peer's side was seen and matches (a checker thread polls
// every 1 ms), so an eager send cannot succeed past a mismatch: it fails with
// the same report, and the inner backend is aborted (its operation can never
// match). A side whose peer never posts is described in the watchdog's
// timeout report.
// recvAnysource is not checked.
//
// Thread-safety: as the inner backend (ProcessGroup serialises issue).
//
// Note [DETAIL through the backend]
// A store round costs 130-230 us per collective (one TCP round trip per key),
// ~10x a small shm allreduce. A backend that offers it (BackendInfo::
// detailHelperOptions; shm does) carries the fingerprints instead through
// a helper instance of the group's own backend (its own small segment, group
// name "<group>/detail", its own sequence numbers, so the group's numbering,
// flight recorder and watchdog see nothing of it): one blocking all-gather of
// a 512-byte slot per rank, the text in the slot, or in the store under the
// old key when it does not fit. When a rank does not come in time or dies,
// the helper's error names the ranks it waited for (Note [Who did not
// arrive]); the wrapper probes their liveness in the store and raises the
// same report the store exchange gives. The broken helper is dropped and
// later rounds use the store. Other backends (gloo: a helper would add a
// second full mesh of sockets per group) use the store exchange under
// "dbg/<group>/c/<seq>/" (StoreExchange), as does every backend when
// DISTLAB_DETAIL_EXCHANGE=store (as read for the group: BackendContext::env).
// History lines come from the fingerprints this rank received, so both ways
// give identical reports.
#include <condition_variable>
#include <deque>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/comm/debug/collective_fingerprint.hpp"
#include "runtime/comm/debug/rank_names.hpp"
#include "runtime/comm/debug/store_exchange.hpp"
#include "runtime/comm/forwarding_backend.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::comm {

class ProcessGroupWrapper : public ForwardingBackend {
 public:
  static constexpr int kHistory = 4;

  ProcessGroupWrapper(BackendPtr inner, const BackendContext& context);
  ~ProcessGroupWrapper() override;

  void abort(const std::string& reason) override;     // the helper too
  void shutdown(Milliseconds timeout) override;       // the helper too

 protected:
  // Checks every collective (and send / recv) before forwarding it.
  WorkPtr intercept(const Operation& op) override;

 private:
  struct PendingP2P {
    WorkPtr inner;  // the backend's Work
    WorkPtr outer;  // what the caller got; completes once paired and done
    std::string theirKey;
    CollectiveFingerprint mine;
    bool isSend = false;
    bool paired = false;
    Clock::time_point deadline{};
    std::exception_ptr failure;  // the mismatch found; the outer Work's error
  };

  // Collectives (process_group_wrapper.cpp).
  void checkCollective(const CollectiveFingerprint& fp, Milliseconds timeout);
  [[noreturn]] void throwBarrierFailure(const CollectiveFingerprint& fp,
                                        const ExchangeResult& result, Milliseconds timeout);
  [[noreturn]] void throwMismatch(const std::vector<CollectiveFingerprint>& all);
  std::string historyLine(int rank, const CollectiveFingerprint& current);
  std::string collectiveKey(uint64_t seq, int rank) const;
  void forgetOld(uint64_t seq);
  // Fingerprint exchange (process_group_wrapper_exchange.cpp).
  static BackendPtr makeHelper(const BackendPtr& inner, const BackendContext& ctx);
  // `text` is fp.serialize().
  ExchangeResult exchange(const CollectiveFingerprint& fp, const std::string& text,
                          Milliseconds timeout);
  // Note [Agreeing by hash]: every rank's text is this one's (result.uniform),
  // a rank is missing, or nullopt when the texts differ.
  std::optional<ExchangeResult> agreeByHash(Backend& helper, const CollectiveFingerprint& fp,
                                            const std::string& text, Milliseconds timeout);
  ExchangeResult missingResult(const std::vector<int>& ranks, bool peerDied);
  BackendPtr helper() const;
  // The serialized fingerprint `rank` sent for collective `seq`, if this rank
  // still keeps it (the last kHistory + 2 rounds).
  std::optional<std::string> pastFingerprint(uint64_t seq, int rank) const;
  // `uniform`: every rank sent values[0] (Note [Agreeing by hash]).
  void remember(uint64_t seq, std::vector<std::string> values, bool uniform = false);

  // Point to point (process_group_wrapper_p2p.cpp).
  WorkPtr checkedP2P(const Operation& op);
  std::string p2pKey(int src, int dst, int tag, uint64_t k, bool sendSide) const;
  std::string p2pMismatch(const CollectiveFingerprint& mine, bool isSend,
                          const CollectiveFingerprint& theirs) const;
  void checkerLoop();
  bool checkPending(PendingP2P& p);
  std::string describeOne(const PendingP2P& p);
  std::string describeUnmatched();

  std::shared_ptr<Store> store_;
  std::string groupName_;
  std::string keyBase_;
  int rank_;
  std::vector<int> globalRanks_;
  RankNames names_;  // every message names ranks through it (Note [Naming ranks])
  bool canDelete_ = true;
  mutable std::mutex helperMutex_;
  BackendPtr helper_;        // GUARDED_BY(helperMutex_); null: the store exchange
  uint64_t helperSeq_ = 0;   // the helper's own collective numbers
  std::mutex slotMutex_;
  Tensor slotMine_, slotAll_;  // the helper all-gather's buffers; GUARDED_BY(slotMutex_)
  struct Round {
    uint64_t seq;
    std::vector<std::string> values;  // by rank, or one text every rank sent
    bool uniform;
  };
  std::deque<Round> recent_;

  std::mutex p2pMutex_;
  std::map<std::pair<int, int>, uint64_t> sendCounts_, recvCounts_;  // (peer, tag)
  std::vector<PendingP2P> pending_;                                  // GUARDED_BY(p2pMutex_)
  std::condition_variable p2pCv_;
  bool stopping_ = false;  // GUARDED_BY(p2pMutex_)
  std::thread checker_;
};

}  // namespace distlab::comm
