#pragma once
// ProcessGroup: the front door (c10d ProcessGroup). Holds rank, size, name,
// description, the store, the device-type -> backend routing, the collective
// sequence number and the per-peer point-to-point numbers, and dispatches each
// operation to the backend of its tensors' device.
//
// Note [Issue order]
// Every member issues the same collectives in the same order. The group numbers
// collectives 1, 2, 3, ... (sequenceNumber()) and point-to-point messages per
// peer and direction (send #k to peer p pairs with recv #k from this rank on
// p). The numbers are put in the options (`seq`) before the backend sees them,
// so decorators, error messages, the flight recorder and fault plans all use
// the same numbering. Issue is serialised by a mutex: two threads may issue on
// one group, but then the order across ranks is theirs to keep.
//
// Timeouts: options with kUnsetTimeout get the group's timeout.
// Ranks in options (rootRank, peers) are group ranks; see
// resolveGroupRank() for PyTorch's global `src`/`dst` vs `group_src`/`group_dst`.
//
// Non-members: newGroup() returns a non-member handle to ranks outside the group
// (PyTorch GroupMember.NON_GROUP_MEMBER): isMember() false, rank() and size()
// -1, and every operation throws ValueError naming the group.
//
// After a backend failure every new operation throws DistBackendError
// "group '<name>' refuses new work: <why>" (the backend's errorReason()).
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/comm/backend.hpp"
#include "runtime/comm/store/store.hpp"
#include "runtime/comm/types.hpp"
#include "runtime/comm/work.hpp"

namespace distlab::comm {

struct ProcessGroupConfig {
  std::shared_ptr<Store> store;
  int rank = 0;                  // group rank
  int size = 1;
  std::string name;              // unique per group; the same on every member
  std::string description;       // group_desc
  Milliseconds timeout = kDefaultProcessGroupTimeout;
  std::vector<int> globalRanks;  // empty: identity (0..size-1)
  std::string backendSpec;       // "shm", "cpu:shm,cuda:nccl" (for backendName())
  // The environment read the group's backends get (BackendContext::env);
  // unset: createProcessGroup reads it (Note [Environment read once]).
  std::optional<RuntimeEnv> env;
};

// One entry of batch_isend_irecv (PyTorch P2POp): peer is a group rank.
struct P2POp {
  enum Kind : uint8_t { kIsend, kIrecv };
  Kind op = kIsend;
  Tensor tensor;
  int peer = 0;
  int tag = 0;
};

// Hooks called for every Work the group issues (after the backend returned it;
// WorkObserver replays transitions already made). Use for the flight recorder
// and watchdog when a Backend decorator is not the right seam.
using WorkObserverFactory = std::function<std::shared_ptr<WorkObserver>(const Work&)>;

class ProcessGroup : public std::enable_shared_from_this<ProcessGroup> {
 public:
  explicit ProcessGroup(ProcessGroupConfig config);
  // A handle for a rank outside the group (see header comment).
  static std::shared_ptr<ProcessGroup> nonMember(std::string name, std::vector<int> globalRanks);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  // ---- identity --------------------------------------------------------------------
  bool isMember() const { return member_; }
  int rank() const { return member_ ? config_.rank : -1; }
  int size() const { return member_ ? config_.size : -1; }
  // Size even for non-members (the number of ranks in the group).
  int groupSize() const { return static_cast<int>(globalRanks_.size()); }
  const std::string& name() const { return config_.name; }
  const std::string& description() const { return config_.description; }
  const std::shared_ptr<Store>& store() const { return config_.store; }
  Milliseconds timeout() const { return config_.timeout; }
  // The backend name for CPU tensors (or the spec for mixed routing), lowercase.
  std::string backendName() const;

  // ---- ranks -------------------------------------------------------------------------
  const std::vector<int>& globalRanks() const { return globalRanks_; }
  // Throws Error "global rank R is not part of group '<name>'" when absent.
  int groupRankOf(int globalRank) const;
  int globalRankOf(int groupRank) const;  // throws when out of range
  bool containsGlobalRank(int globalRank) const;
  // PyTorch's src/group_src rule: exactly one of `globalRank`, `groupRank` may be
  // given ("Invalid to specify both"); neither -> `defaultGroupRank`, or a
  // ValueError when that is -1 ("must specify one of src and group_src").
  // `what` names the argument pair ("src", "dst", "peer").
  int resolveGroupRank(std::optional<int> globalRank, std::optional<int> groupRank,
                       std::string_view what, int defaultGroupRank = -1) const;

  // ---- backends ------------------------------------------------------------------------
  void setBackend(DeviceType device, BackendPtr backend);
  BackendPtr getBackend(DeviceType device) const;  // throws naming the device when none
  bool hasBackend(DeviceType device) const;

  // ---- numbering (Note [Issue order]) ----------------------------------------------------
  uint64_t sequenceNumber() const;            // last collective seq issued (0: none yet)
  uint64_t sendCount(int peer) const;         // sends issued to peer
  uint64_t recvCount(int peer) const;         // recvs issued from peer

  // ---- collectives (see Backend for the per-op contracts) -------------------------------
  WorkPtr broadcast(const Tensor& tensor, BroadcastOptions opts = {});
  WorkPtr allreduce(const Tensor& tensor, AllreduceOptions opts = {});
  WorkPtr allreduceCoalesced(const std::vector<Tensor>& tensors,
                             AllreduceCoalescedOptions opts = {});
  WorkPtr reduce(const Tensor& tensor, ReduceOptions opts = {});
  WorkPtr allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                    AllgatherOptions opts = {});
  WorkPtr allgatherIntoTensor(const Tensor& output, const Tensor& input,
                              AllgatherOptions opts = {});
  WorkPtr allgatherCoalesced(const std::vector<std::vector<Tensor>>& outputLists,
                             const std::vector<Tensor>& inputs, AllgatherOptions opts = {});
  WorkPtr gather(const std::vector<Tensor>& outputs, const Tensor& input,
                 GatherOptions opts = {});
  WorkPtr scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                  ScatterOptions opts = {});
  WorkPtr reduceScatter(const Tensor& output, const std::vector<Tensor>& inputs,
                        ReduceScatterOptions opts = {});
  WorkPtr reduceScatterTensor(const Tensor& output, const Tensor& input,
                              ReduceScatterOptions opts = {});
  WorkPtr alltoall(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                   AllToAllOptions opts = {});
  // Empty split lists mean equal division of dim 0 by size() (which must divide).
  WorkPtr alltoallSingle(const Tensor& output, const Tensor& input,
                         std::vector<int64_t> outputSplits = {},
                         std::vector<int64_t> inputSplits = {}, AllToAllOptions opts = {});
  WorkPtr barrier(BarrierOptions opts = {});

  // ---- point to point -------------------------------------------------------------------------
  // Blocking send/recv as PyTorch: send to self is a ValueError (use isend).
  void send(const Tensor& tensor, int dstRank, SendOptions opts = {});
  // Returns the sender's group rank.
  int recv(const Tensor& tensor, int srcRank, RecvOptions opts = {});
  int recvAnysource(const Tensor& tensor, RecvOptions opts = {});
  WorkPtr isend(const Tensor& tensor, int dstRank, SendOptions opts = {});
  WorkPtr irecv(const Tensor& tensor, int srcRank, RecvOptions opts = {});
  WorkPtr irecvAnysource(const Tensor& tensor, RecvOptions opts = {});
  // Issues every op in list order (the order must match the peers' lists).
  std::vector<WorkPtr> batchIsendIrecv(const std::vector<P2POp>& ops);

  // ---- groups -----------------------------------------------------------------------------------
  // A subgroup of this group's members (c10d split_group): collective over this
  // group; `ranks` are group ranks of this group. Non-members get a non-member handle.
  std::shared_ptr<ProcessGroup> split(const std::vector<int>& ranks, std::string description = "");

  // ---- observers and lifecycle -----------------------------------------------------------------
  void addWorkObserverFactory(WorkObserverFactory factory);
  // Backend::abort on every backend; later work is refused.
  void abort(const std::string& reason = "aborted by user");
  void shutdown(Milliseconds timeout = Milliseconds(10000));

 private:
  ProcessGroup(ProcessGroupConfig config, bool member);
  // The backend an operation on `tensor` (or `device`) runs on; throws
  // DistBackendError when the group has none. Lock-free (Note [Backends
  // without a lock]): valid as long as this group.
  Backend& backendFor(const Tensor& tensor, std::string_view op) const;
  Backend& backendForDevice(DeviceType device, std::string_view op) const;
  void checkMember(std::string_view op) const;
  void checkHealthy(const Backend& backend, std::string_view op) const;
  uint64_t nextSeq();
  Milliseconds resolveTimeout(Milliseconds timeout) const;
  void checkPeer(int peer, std::string_view op) const;
  WorkPtr observe(WorkPtr work);
  void checkSplitRank(int r) const;

  ProcessGroupConfig config_;
  bool member_;
  std::vector<int> globalRanks_;
  std::map<int, int> globalToGroup_;
  mutable std::mutex mutex_;
  std::array<BackendPtr, 2> backends_{};                 // by DeviceType; GUARDED_BY(mutex_)
  // Note [Backends without a lock]: every issue looks its backend up, and a
  // lock and a shared_ptr copy there were a tenth of a small allreduce's
  // cost (reports/collectives_shm_notes.md). setBackend publishes the raw pointer here, and a backend it
  // replaces moves to replaced_, so a pointer read here stays valid as long
  // as the group (replacing a backend is rare: set-up and tests).
  std::array<std::atomic<Backend*>, 2> backendPtrs_{};
  std::vector<BackendPtr> replaced_;                     // GUARDED_BY(mutex_)
  std::atomic<uint64_t> seq_{0};  // incremented under issueMutex_, read anywhere
  std::vector<uint64_t> sendCounts_, recvCounts_;        // GUARDED_BY(mutex_)
  uint64_t recvAnyCount_ = 0;                            // GUARDED_BY(mutex_)
  uint64_t splitCount_ = 0;                              // GUARDED_BY(mutex_)
  std::vector<WorkObserverFactory> observerFactories_;   // GUARDED_BY(mutex_)
  std::atomic<bool> hasObserverFactories_{false};  // lets observe() skip the lock
  std::recursive_mutex issueMutex_;  // serialises issue (numbering + backend call)
};

using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

// Builds a group with backends from `spec` through the registry and the
// installed decorators (backend_registry.hpp). Blocks until every member has
// joined (backend set-up) or config.timeout passes.
ProcessGroupPtr createProcessGroup(ProcessGroupConfig config,
                                   const std::map<std::string, std::string>& backendOptions = {});

}  // namespace distlab::comm
