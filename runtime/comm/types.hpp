#pragma once
// Vocabulary shared by ProcessGroup, Backend and every backend: ReduceOp, the
// operation types, and one options struct per operation (docs/DESIGN.md,
// house style 2: defaults in-line, timeout included; PyTorch c10d Types.hpp).
//
// Ranks in options (rootRank, peers) are GROUP ranks. The global <-> group
// translation and PyTorch's src/group_src rule live in ProcessGroup.
//
// `timeout`: kUnsetTimeout means "the group's default" (30 min unless the group
// was created with another). ProcessGroup resolves it before calling a backend,
// so a backend always sees a positive timeout.
// `seq`: filled by ProcessGroup (collectives: the group's sequence number,
// from 1; point-to-point: the per-peer number, from 1). Callers leave it 0.
// `asyncOp`: false lets a CPU backend run the operation on the calling thread
// when its queue is idle (the caller is about to wait anyway); results and
// ordering are the same either way.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace distlab::comm {

using Milliseconds = std::chrono::milliseconds;

inline constexpr Milliseconds kUnsetTimeout{-1};
// PyTorch: 30 minutes for non-NCCL backends, 10 minutes for NCCL.
inline constexpr Milliseconds kDefaultProcessGroupTimeout{30 * 60 * 1000};
inline constexpr Milliseconds kDefaultNcclTimeout{10 * 60 * 1000};

// PyTorch ReduceOp. Kinds follow torch.distributed.ReduceOp; PREMUL_SUM carries
// the scalar each rank multiplies its own input by before summing
// (torch.distributed._make_nccl_premul_sum). Which op is defined on which dtype:
// see reduce_kernels.hpp.
struct ReduceOp {
  enum Kind : uint8_t { kSum, kAvg, kProduct, kMin, kMax, kBand, kBor, kBxor, kPremulSum };

  ReduceOp(Kind k = kSum) : kind(k) {}  // NOLINT(google-explicit-constructor)
  static ReduceOp premulSum(double scalar) {
    ReduceOp op(kPremulSum);
    op.scalar = scalar;
    return op;
  }
  bool operator==(const ReduceOp& other) const {
    return kind == other.kind && (kind != kPremulSum || scalar == other.scalar);
  }

  Kind kind = kSum;
  double scalar = 1.0;  // PREMUL_SUM only
};

// "SUM", "AVG", ..., "PREMUL_SUM" (PyTorch spelling).
std::string_view reduceOpName(ReduceOp op);
// Parses "sum"/"SUM", "avg", "prod"/"product", "min", "max", "band", "bor",
// "bxor" (any case); throws ValueError listing the valid names.
ReduceOp parseReduceOp(std::string_view text);

// Operation types (c10d OpType). Their names (c10d, torch.distributed API,
// profiling) are in one table: op_names.hpp.
enum class OpType : uint8_t {
  kBroadcast,
  kAllreduce,
  kAllreduceCoalesced,
  kReduce,
  kAllgather,
  kAllgatherBase,  // all_gather_into_tensor
  kAllgatherCoalesced,
  kGather,
  kScatter,
  kReduceScatter,
  kReduceScatterBase,  // reduce_scatter_tensor
  kAlltoall,
  kAlltoallBase,  // all_to_all_single
  kBarrier,
  kSend,
  kRecv,
  kRecvAnysource,
  kUnknown,
};
// "BROADCAST", "ALLREDUCE", "_ALLGATHER_BASE", "SEND", ... (c10d opTypeToString):
// the c10d column of op_names.cpp's table, defined there.
std::string_view opTypeName(OpType type);
bool isPointToPoint(OpType type);

struct BroadcastOptions {
  int rootRank = 0;
  Milliseconds timeout = kUnsetTimeout;
  bool asyncOp = true;
  uint64_t seq = 0;
};

struct AllreduceOptions {
  ReduceOp reduceOp = ReduceOp::kSum;
  Milliseconds timeout = kUnsetTimeout;
  bool asyncOp = true;
  uint64_t seq = 0;
};

struct AllreduceCoalescedOptions {
  ReduceOp reduceOp = ReduceOp::kSum;
  Milliseconds timeout = kUnsetTimeout;
  bool asyncOp = true;
  uint64_t seq = 0;
};

struct ReduceOptions {
  ReduceOp reduceOp = ReduceOp::kSum;
  int rootRank = 0;
  Milliseconds timeout = kUnsetTimeout;
  bool asyncOp = true;
  uint64_t seq = 0;
};

// allgather, all_gather_into_tensor and allgather_coalesced.
struct AllgatherOptions {
  Milliseconds timeout = kUnsetTimeout;
  bool asyncOp = true;
  uint64_t seq = 0;
};

struct GatherOptions {
  int rootRank = 0;
  Milliseconds timeout = kUnsetTimeout;
  bool asyncOp = true;
  uint64_t seq = 0;
};

struct ScatterOptions {
  int rootRank = 0;
  Milliseconds timeout = kUnsetTimeout;
  bool asyncOp = true;
  uint64_t seq = 0;
};

// reduce_scatter and reduce_scatter_tensor.
struct ReduceScatterOptions {
  ReduceOp reduceOp = ReduceOp::kSum;
  Milliseconds timeout = kUnsetTimeout;
  bool asyncOp = true;
  uint64_t seq = 0;
};

// alltoall and all_to_all_single.
struct AllToAllOptions {
  Milliseconds timeout = kUnsetTimeout;
  bool asyncOp = true;
  uint64_t seq = 0;
};

struct BarrierOptions {
  Milliseconds timeout = kUnsetTimeout;
  bool asyncOp = true;
  uint64_t seq = 0;
};

// send / recv / recv from any source. Tags must be >= 0; a recv matches the
// oldest message from its source (any source for recvAnysource) with the same
// tag. `seq` is the per-peer point-to-point number (0 for recvAnysource).
struct SendOptions {
  int tag = 0;
  Milliseconds timeout = kUnsetTimeout;
  uint64_t seq = 0;
};

struct RecvOptions {
  int tag = 0;
  Milliseconds timeout = kUnsetTimeout;
  uint64_t seq = 0;
};

}  // namespace distlab::comm
