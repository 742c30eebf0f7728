#include "runtime/comm/types.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "runtime/core/errors.hpp"

namespace distlab::comm {

std::string_view reduceOpName(ReduceOp op) {
  switch (op.kind) {
    case ReduceOp::kSum: return "SUM";
    case ReduceOp::kAvg: return "AVG";
    case ReduceOp::kProduct: return "PRODUCT";
    case ReduceOp::kMin: return "MIN";
    case ReduceOp::kMax: return "MAX";
    case ReduceOp::kBand: return "BAND";
    case ReduceOp::kBor: return "BOR";
    case ReduceOp::kBxor: return "BXOR";
    case ReduceOp::kPremulSum: return "PREMUL_SUM";
  }
  return "UNKNOWN";
}

ReduceOp parseReduceOp(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "sum") return ReduceOp::kSum;
  if (lower == "avg") return ReduceOp::kAvg;
  if (lower == "prod" || lower == "product") return ReduceOp::kProduct;
  if (lower == "min") return ReduceOp::kMin;
  if (lower == "max") return ReduceOp::kMax;
  if (lower == "band") return ReduceOp::kBand;
  if (lower == "bor") return ReduceOp::kBor;
  if (lower == "bxor") return ReduceOp::kBxor;
  throw ValueError("unknown reduce op '" + std::string(text) +
                   "'; valid: sum, avg, prod, min, max, band, bor, bxor");
}

std::string_view opTypeName(OpType type) {
  switch (type) {
    case OpType::kBroadcast: return "BROADCAST";
    case OpType::kAllreduce: return "ALLREDUCE";
    case OpType::kAllreduceCoalesced: return "ALLREDUCE_COALESCED";
    case OpType::kReduce: return "REDUCE";
    case OpType::kAllgather: return "ALLGATHER";
    case OpType::kAllgatherBase: return "_ALLGATHER_BASE";
    case OpType::kAllgatherCoalesced: return "ALLGATHER_COALESCED";
    case OpType::kGather: return "GATHER";
    case OpType::kScatter: return "SCATTER";
    case OpType::kReduceScatter: return "REDUCE_SCATTER";
    case OpType::kReduceScatterBase: return "_REDUCE_SCATTER_BASE";
    case OpType::kAlltoall: return "ALLTOALL";
    case OpType::kAlltoallBase: return "ALLTOALL_BASE";
    case OpType::kBarrier: return "BARRIER";
    case OpType::kSend: return "SEND";
    case OpType::kRecv: return "RECV";
    case OpType::kRecvAnysource: return "RECVANYSOURCE";
    case OpType::kUnknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

bool isPointToPoint(OpType type) {
  return type == OpType::kSend || type == OpType::kRecv || type == OpType::kRecvAnysource;
}

}  // namespace distlab::comm
