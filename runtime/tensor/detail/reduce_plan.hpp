#pragma once
// Note [Reduction layout]
// Every reduction is brought to one shape: a contiguous buffer viewed as
// [outer, reduce, inner]. When the input is contiguous and the reduced dims
// are one adjacent block this is free; otherwise the input is permuted to
// (kept dims..., reduced dims...) and copied once, giving inner == 1. Kernels
// then either reduce rows (inner == 1) or accumulate whole rows elementwise
// (inner > 1, vectorisable), never computing per-element indices.
#include <cstdint>
#include <vector>

#include "runtime/tensor/tensor.hpp"

namespace distlab::detail {

struct ReducePlan {
  Tensor input;  // contiguous, laid out as [outer, reduce, inner]
  int64_t outer = 1;
  int64_t reduce = 1;
  int64_t inner = 1;
  Shape outShape;  // the result's shape (keepdim applied)
};

// Empty `dims` reduces over all dims. Throws ValueError on bad or repeated dims.
ReducePlan planReduction(const char* op, const Tensor& t, const Shape& dims, bool keepdim);

// out[o * inner + i] = fold over r of x[(o * reduce + r) * inner + i], starting at init.
template <typename Acc, typename T, typename Op>
void foldReduce(const T* x, const ReducePlan& p, Acc init, Op op, Acc* out) {
  if (p.inner == 1) {
    for (int64_t o = 0; o < p.outer; ++o) {
      const T* row = x + o * p.reduce;
      // Eight independent accumulators break the add latency chain.
      Acc partial[8] = {init, init, init, init, init, init, init, init};
      int64_t r = 0;
      for (; r + 8 <= p.reduce; r += 8) {
        for (int k = 0; k < 8; ++k) partial[k] = op(partial[k], static_cast<Acc>(row[r + k]));
      }
      Acc acc = init;
      for (; r < p.reduce; ++r) acc = op(acc, static_cast<Acc>(row[r]));
      for (int k = 0; k < 8; ++k) acc = op(acc, partial[k]);
      out[o] = acc;
    }
    return;
  }
  for (int64_t o = 0; o < p.outer; ++o) {
    Acc* dst = out + o * p.inner;
    for (int64_t i = 0; i < p.inner; ++i) dst[i] = init;
    for (int64_t r = 0; r < p.reduce; ++r) {
      const T* row = x + (o * p.reduce + r) * p.inner;
      for (int64_t i = 0; i < p.inner; ++i) dst[i] = op(dst[i], static_cast<Acc>(row[i]));
    }
  }
}

}  // namespace distlab::detail
