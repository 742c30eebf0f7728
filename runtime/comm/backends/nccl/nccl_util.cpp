#include "runtime/comm/backends/nccl/nccl_util.hpp"

#include <fmt/format.h>

#include <type_traits>

#include "runtime/core/errors.hpp"

namespace distlab::comm::nccl_backend {

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return ncclFloat32;
    case DType::kFloat64: return ncclFloat64;
    case DType::kFloat16: return ncclFloat16;
    case DType::kBFloat16: return ncclBfloat16;
    case DType::kInt8: return ncclInt8;
    case DType::kUInt8: return ncclUint8;
    case DType::kInt32: return ncclInt32;
    case DType::kInt64: return ncclInt64;
    case DType::kBool: return ncclUint8;
  }
  throw ValueError(fmt::format("nccl: dtype {} has no NCCL type", dtypeName(dtype)));
}

ncclRedOp_t ncclReduceOp(ReduceOp op, DType dtype) {
  const bool isBool = dtype == DType::kBool;
  switch (op.kind) {
    case ReduceOp::kSum: return isBool ? ncclMax : ncclSum;
    case ReduceOp::kProduct: return isBool ? ncclMin : ncclProd;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kAvg:
      if (isBool) break;
      return ncclAvg;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      throw ValueError(fmt::format("Cannot use ReduceOp.{} with NCCL", reduceOpName(op)));
    case ReduceOp::kPremulSum:
      break;
  }
  throw ValueError(fmt::format("nccl: ReduceOp {} is not defined for dtype {}",
                               reduceOpName(op), dtypeName(dtype)));
}

ScopedRedOp::ScopedRedOp(ReduceOp op, DType dtype, ncclComm_t comm) : op_(ncclSum), comm_(comm) {
  if (op.kind != ReduceOp::kPremulSum) {
    op_ = ncclReduceOp(op, dtype);
    return;
  }
  if (!isFloatingPoint(dtype)) {
    throw ValueError(fmt::format("nccl: PREMUL_SUM needs a floating-point tensor, not {}",
                                 dtypeName(dtype)));
  }
  dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      T scalar = static_cast<T>(static_cast<float>(op.scalar));
      if constexpr (std::is_same_v<T, double>) scalar = op.scalar;
      checkNccl(ncclRedOpCreatePreMulSum(&op_, &scalar, ncclType(dtype), ncclScalarHostImmediate,
                                         comm_),
                "ncclRedOpCreatePreMulSum", comm_);
    }
  });
  created_ = true;
}

ScopedRedOp::~ScopedRedOp() {
  if (created_) ncclRedOpDestroy(op_, comm_);
}

void checkNccl(ncclResult_t result, std::string_view what, ncclComm_t comm) {
  if (result == ncclSuccess) return;
  std::string detail = ncclGetLastError(comm);
  throw DistBackendError(fmt::format("{} failed: {}{}", what, ncclGetErrorString(result),
                                     detail.empty() ? "" : " (" + detail + ")"));
}

std::string ncclVersionString() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z from 2.9 on.
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

std::vector<Tensor> concat(std::vector<Tensor> a, const std::vector<Tensor>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace distlab::comm::nccl_backend
