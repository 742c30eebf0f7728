// Operations Gloo has no algorithm for, composed from Gloo collectives and
// distlab's reduce kernels (see the table in gloo_backend.hpp).
#include <cstring>

#include "runtime/comm/backends/gloo/gloo_algorithms.hpp"
#include "runtime/comm/reduce_kernels.hpp"

namespace distlab::comm::gloo_backend {

// reduce_scatter: one all-to-all moves block q of every rank to rank q; the
// local reduction then runs in rank order, so the result is what the shm
// backend computes (float16/bfloat16 accumulate in float32, rounded once).
// Traffic per rank equals a ring reduce-scatter's: (n-1)/n of the input.
void composedReduceScatter(const GlooCall& call, const void* in, void* out, size_t count,
                           DType dtype, ReduceOp op) {
  const int n = call.size();
  const size_t block = count * elementSize(dtype);
  if (block == 0) return;
  uint8_t* staged = call.scratch->get(0, block * n);
  // PREMUL_SUM scales this rank's contribution before it leaves (stageInput).
  stageInput(staged, in, count * n, dtype, op);
  uint8_t* gathered = call.scratch->get(1, block * n);
  glooAlltoall(call, staged, gathered, block);
  std::vector<const void*> srcs(n);
  for (int p = 0; p < n; ++p) srcs[p] = gathered + block * p;
  reduceN(out, srcs.data(), n, count, dtype, op);
}

// allreduce_coalesced: tensors of one dtype are packed into a single buffer and
// reduced by one Gloo allreduce; mixed dtypes fall back to one call each (all
// under the same operation, in list order on every rank).
void composedAllreduceCoalesced(const GlooCall& call, const std::vector<Region>& regions,
                                ReduceOp op) {
  if (regions.empty()) {
    glooBarrier(call);  // still a collective: every rank takes part
    return;
  }
  bool oneDtype = true;
  size_t total = 0;
  for (const auto& r : regions) {
    oneDtype = oneDtype && r.dtype == regions[0].dtype;
    total += r.count;
  }
  if (!oneDtype) {
    for (const auto& r : regions) glooAllreduce(call, r.data, r.count, r.dtype, op);
    return;
  }
  const size_t es = elementSize(regions[0].dtype);
  std::vector<uint8_t> packed(total * es);
  size_t off = 0;
  for (const auto& r : regions) {
    if (r.count) std::memcpy(packed.data() + off, r.data, r.count * es);
    off += r.count * es;
  }
  glooAllreduce(call, packed.data(), total, regions[0].dtype, op);
  off = 0;
  for (const auto& r : regions) {
    if (r.count) std::memcpy(r.data, packed.data() + off, r.count * es);
    off += r.count * es;
  }
}

}  // namespace distlab::comm::gloo_backend
