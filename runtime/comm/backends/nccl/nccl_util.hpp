#pragma once
// NCCL vocabulary for the nccl backend: dtype and ReduceOp mapping, error
// checks. Built only with NCCL (DISTLAB_HAVE_NCCL).
#include <nccl.h>

#include <string>
#include <string_view>
#include <vector>

#include "runtime/comm/types.hpp"
#include "runtime/tensor/dtype.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::comm::nccl_backend {

// float32/64, float16, bfloat16, int8, uint8, int32, int64; bool travels as
// uint8 (see ncclReduceOp). Every distlab dtype has an NCCL type.
ncclDataType_t ncclType(DType dtype);

// The NCCL operation for `op` on `dtype`, or throws ValueError naming both:
// BAND/BOR/BXOR have no NCCL operation ("Cannot use ReduceOp.BAND with NCCL",
// PyTorch's text). On bool, SUM is MAX and PRODUCT is MIN (logical or / and,
// as PyTorch). PREMUL_SUM is not handled here (NcclComm creates it per call).
ncclRedOp_t ncclReduceOp(ReduceOp op, DType dtype);

// The NCCL operation of one call. PREMUL_SUM is created here
// (ncclRedOpCreatePreMulSum, the scalar in the tensor's dtype, host-immediate)
// and destroyed with this object, right after the call was enqueued (NCCL
// allows that). Other operations: ncclReduceOp.
class ScopedRedOp {
 public:
  ScopedRedOp(ReduceOp op, DType dtype, ncclComm_t comm);
  ~ScopedRedOp();
  ScopedRedOp(const ScopedRedOp&) = delete;
  ScopedRedOp& operator=(const ScopedRedOp&) = delete;
  ncclRedOp_t get() const { return op_; }

 private:
  ncclRedOp_t op_;
  ncclComm_t comm_;
  bool created_ = false;
};

// Throws DistBackendError "<what> failed: <NCCL error string> (<last error>)"
// unless `result` is ncclSuccess. `comm` may be null.
void checkNccl(ncclResult_t result, std::string_view what, ncclComm_t comm = nullptr);

// "2.28.3" (the library's version, not the header's).
std::string ncclVersionString();

// t's element count, as NCCL calls take it (Note [Empty NCCL calls]).
inline size_t count(const Tensor& t) { return static_cast<size_t>(t.numel()); }

// a followed by b: every tensor one call reads or writes, for its stream bookkeeping.
std::vector<Tensor> concat(std::vector<Tensor> a, const std::vector<Tensor>& b);

}  // namespace distlab::comm::nccl_backend
