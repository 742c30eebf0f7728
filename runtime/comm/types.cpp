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

bool isPointToPoint(OpType type) {
  return type == OpType::kSend || type == OpType::kRecv || type == OpType::kRecvAnysource;
}

}  // namespace distlab::comm
