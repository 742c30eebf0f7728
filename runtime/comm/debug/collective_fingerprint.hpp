#pragma once
// CollectiveFingerprint: what one rank is about to run, in a form every rank
// can compare (PyTorch's CollectiveFingerPrint; docs/pytorch-semantics.md,
// "DETAIL checks").
//
// Note [Fingerprint checks]
// Two kinds of fields:
// - uniform fields must be equal on every rank: op, sequence number, number of
//   tensors, each tensor's dtype and device type, the reduce op and the root,
//   and the tensor shapes when `uniformShapes` (allreduce, broadcast, the
//   *_into_tensor/_tensor variants, coalesced lists, ...);
// - per-peer element counts, for the operations where sizes legitimately
//   differ between ranks (allgather with uneven inputs, allgather_coalesced,
//   alltoall, all_to_all_single with splits): sendCounts[q] elements go to
//   rank q, recvCounts[q] are expected from rank q. They are cross-checked:
//   rank r's sendCounts[q] must equal rank q's recvCounts[r].
// Unlike PyTorch, barrier, coalesced operations, alltoall and uneven
// allgather are checked too (PyTorch runs them with an empty tensor list), and
// a barrier never compares anything but op and sequence number, so a correct
// program never fails (PyTorch #148976).
//
// Text form, PyTorch's spelling with the missing comma fixed:
//   CollectiveFingerPrint(SequenceNumber=3, OpType=ALLREDUCE, TensorShape=[10],
//   TensorDtypes=float32, TensorDeviceTypes=cpu, ReduceOp=SUM)
// (several tensors: TensorShapes=[[2], [3]], TensorDtypes=[float32, int64]).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/comm/debug/rank_names.hpp"

#include "runtime/comm/types.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::comm {

struct TensorSignature {
  DType dtype = DType::kFloat32;
  DeviceType device = DeviceType::kCPU;
  Shape shape;
  bool operator==(const TensorSignature&) const = default;
};

struct CollectiveFingerprint {
  OpType opType = OpType::kUnknown;
  uint64_t seq = 0;
  std::vector<TensorSignature> tensors;
  bool uniformShapes = true;
  std::string reduceOp;  // "" when the op does not reduce
  int root = -1;         // -1 when the op has no root
  std::vector<int64_t> sendCounts, recvCounts;  // per peer; empty when unused
  int peer = -1;         // point-to-point only
  int tag = 0;

  static CollectiveFingerprint of(OpType op, uint64_t seq, const std::vector<Tensor>& tensors);

  std::string toString() const;
  // "seq 3 ALLREDUCE [10] float32" (history lines).
  std::string shortString() const;
  // Compact text for the store; parse() inverts it (throws DistBackendError on
  // malformed input, naming it).
  std::string serialize() const;
  static CollectiveFingerprint parse(std::string_view text);
};

// The aspects in which `a` (this rank) and `b` differ, in PyTorch's wording
// ("\t Sequence number: 3vs 4", "  Op type: ALLREDUCEvs BROADCAST",
// "  Tensor Tensor shapes: [10]vs [20]", "  Tensor Tensor dtypes: ...",
// "  Tensor Tensor devices: ...") plus "  Number of tensors: 1vs 2",
// "  Reduce op: SUMvs MAX", "  Root: 0vs 1". Empty when they agree on every
// uniform field (Note [Fingerprint checks]).
std::vector<std::string> fingerprintDifferences(const CollectiveFingerprint& a,
                                                const CollectiveFingerprint& b);

// The first per-peer count mismatch across `all` (indexed by group rank):
// rank `sender` sends `sent` elements to `receiver`, which expects `expected`.
struct CountMismatch {
  int sender = -1;
  int receiver = -1;
  int64_t sent = 0;
  int64_t expected = 0;
  // Ranks named through `names` (Note [Naming ranks]); plain "rank N" without.
  std::string describe(const RankNames* names = nullptr) const;
};
std::vector<CountMismatch> peerCountMismatches(const std::vector<CollectiveFingerprint>& all);

// Who is wrong when fingerprints disagree: the ranks outside the strict
// majority class (empty when there is no strict majority, e.g. 1 vs 1).
std::vector<int> fingerprintCulprits(const std::vector<CollectiveFingerprint>& all);

}  // namespace distlab::comm
