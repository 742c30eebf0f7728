#pragma once
// The Gloo backend's algorithms: thin adapters over Gloo's collectives
// (gloo_collectives.cpp) and the operations composed from them
// (gloo_composed.cpp). Each call runs one operation to completion on the
// calling thread (the backend's progress thread) and throws what Gloo throws;
// the backend translates errors (Note [Gloo peer failure]).
//
// Buffers are raw bytes plus a DType where the operation reduces. Gloo's
// reduce callbacks are type-erased, so every dtype reduces through distlab's
// kernels (reduce_kernels.hpp); float16/bfloat16 sums are done in float32 and
// rounded once (as the shm backend does), by converting around the Gloo call.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <gloo/context.h>

#include "runtime/comm/types.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/tensor/dtype.hpp"

namespace distlab::comm::gloo_backend {

// Staging buffers reused across operations (collectives run one at a time):
// a fresh multi-MiB allocation per call costs more in page faults than the
// copy itself. Grow-only; released with the backend.
struct Scratch {
  std::vector<uint8_t> buffers[2];
  uint8_t* get(int i, size_t bytes) {
    if (buffers[i].size() < bytes) buffers[i].resize(bytes);
    return buffers[i].data();
  }
};

// One operation's Gloo context, tag and deadline.
struct GlooCall {
  std::shared_ptr<::gloo::Context> context;
  uint32_t tag = 0;
  Deadline deadline = Deadline::after(Milliseconds(0));
  Scratch* scratch = nullptr;  // the backend's; never null inside a collective
  int rank() const { return context->rank; }
  int size() const { return context->size; }
  // Time left for the next Gloo call (at least 1 ms: Gloo rejects 0).
  Milliseconds remaining() const;
};

// ---- native Gloo algorithms (gloo_collectives.cpp) ----------------------------------
void glooBroadcast(const GlooCall& call, void* data, size_t bytes, int root);
// In place. AVG = SUM then divide; PREMUL_SUM scales the local input first.
void glooAllreduce(const GlooCall& call, void* data, size_t count, DType dtype, ReduceOp op);
// Result on root only; other ranks' buffers are left unchanged.
void glooReduce(const GlooCall& call, void* data, size_t count, DType dtype, ReduceOp op,
                int root);
// out = concatenation of every rank's `bytes` bytes.
void glooAllgather(const GlooCall& call, const void* in, size_t bytes, void* out);
// out = concatenation of rank q's bytesPerRank[q] bytes, q = 0..n-1.
void glooAllgatherv(const GlooCall& call, const void* in, void* out,
                    const std::vector<size_t>& bytesPerRank);
// On root, out receives n blocks of `bytes`; `out` is ignored elsewhere.
void glooGather(const GlooCall& call, const void* in, size_t bytes, void* out, int root);
// On root, ins[q] (bytes each) goes to rank q's out.
void glooScatter(const GlooCall& call, const std::vector<const void*>& ins, void* out,
                 size_t bytes, int root);
// Block q of `in` (inBytes[q]) goes to rank q; block p of `out` comes from rank p.
void glooAlltoallv(const GlooCall& call, const void* in, const std::vector<size_t>& inBytes,
                   void* out, const std::vector<size_t>& outBytes);
// Equal blocks of `blockBytes`.
void glooAlltoall(const GlooCall& call, const void* in, void* out, size_t blockBytes);
void glooBarrier(const GlooCall& call);

// ---- composed (gloo_composed.cpp) ----------------------------------------------------
// in: n blocks of `count` elements; out (count elements) = reduce over ranks of
// block `rank`. All-to-all of the blocks, then a local reduction in rank order.
void composedReduceScatter(const GlooCall& call, const void* in, void* out, size_t count,
                           DType dtype, ReduceOp op);
// Several tensors, one Gloo allreduce when they share a dtype (packed), one per
// tensor otherwise.
struct Region {
  void* data;
  size_t count;
  DType dtype;
};
void composedAllreduceCoalesced(const GlooCall& call, const std::vector<Region>& regions,
                                ReduceOp op);

}  // namespace distlab::comm::gloo_backend
