#pragma once
// One randomly generated collective (kind, dtype, op, root, sizes, seed) and the
// code that runs it on a group and checks the result on every rank against the
// sequential reference. Used by the RapidCheck properties of the suite.
#include <cstdint>
#include <iosfwd>
#include <set>
#include <string>
#include <vector>

#include "runtime/comm/process_group.hpp"

namespace distlab::testing {

enum class CaseKind : uint8_t {
  kAllreduce,
  kAllreduceCoalesced,
  kBroadcast,
  kReduce,
  kAllgather,  // per-rank sizes differ
  kAllgatherIntoTensor,
  kAllgatherCoalesced,
  kGather,
  kScatter,
  kReduceScatter,
  kReduceScatterTensor,
  kAlltoall,        // list form, uneven
  kAlltoallSingle,  // uneven splits
  kBarrier,
  kP2PRing,         // batch_isend_irecv ring (with send-to-self at world size 1)
  kCount,
};
std::string caseKindName(CaseKind kind);
// The backend operation name a kind needs ("reduce_scatter", ...).
std::string caseOpName(CaseKind kind);

struct OpCase {
  CaseKind kind = CaseKind::kAllreduce;
  DType dtype = DType::kFloat32;
  int reduceOp = 0;     // comm::ReduceOp::Kind
  int root = 0;         // < world size
  Shape shape;          // per-rank tensor shape (rooted/reduced ops); row shape otherwise
  std::vector<int64_t> sizes;  // allgather: numel per rank; alltoall: rows p->q (n*n, row-major)
  bool stacked = false; // all_gather_into_tensor / reduce_scatter_tensor stack form
  uint64_t seed = 1;
};

std::ostream& operator<<(std::ostream& out, const OpCase& c);
// RapidCheck's counterexample printer.
inline void showValue(const OpCase& c, std::ostream& out) { out << c; }

// Runs `c` on `group` (all ranks call with the same case) and throws
// std::runtime_error describing the first wrong value. Kinds in `unsupported`
// must fail with "does not support".
void runCase(comm::ProcessGroup& group, const OpCase& c, const std::set<std::string>& unsupported);

// Identity checks: reduce_scatter_tensor then all_gather_into_tensor equals
// allreduce; all_to_all_single twice with transposed splits is the identity.
void runIdentities(comm::ProcessGroup& group, const OpCase& c,
                   const std::set<std::string>& unsupported);

}  // namespace distlab::testing
