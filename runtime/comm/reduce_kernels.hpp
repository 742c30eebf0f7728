#pragma once
// Reduction kernels for every ReduceOp x DType, shared by every CPU backend
// (shm, gloo). Type-erased on purpose (void pointers + DType), like gloo's
// options API: one compiled kernel set, no templated algorithms.
//
// Which op is defined on which dtype (anything else throws ValueError naming
// the op, the dtype and the backend/operation from `where`):
//   SUM, PRODUCT, MIN, MAX   every dtype (bool: SUM/MAX = or, PRODUCT/MIN = and)
//   AVG, PREMUL_SUM          floating dtypes (float32/64, float16, bfloat16)
//   BAND, BOR, BXOR          integral dtypes and bool
//
// Determinism: reduceN combines sources in index order (rank order), so every
// rank that reduces the same inputs gets bitwise identical results.
// float16/bfloat16 accumulate in float32 and round once at the end.
#include <cstddef>
#include <string_view>

#include "runtime/comm/types.hpp"
#include "runtime/tensor/dtype.hpp"

namespace distlab::comm {

// True when `op` is defined on `dtype`.
bool isReduceOpSupported(ReduceOp op, DType dtype);
// Throws ValueError "<where>: ReduceOp <OP> is not defined for dtype <dtype>" when
// not supported.
void checkReduceOpSupported(ReduceOp op, DType dtype, std::string_view where);

// out[i] = reduce(srcs[0][i], ..., srcs[n-1][i]) for i < count. `out` may alias
// any source. AVG divides the sum by `n`. PREMUL_SUM is a plain sum here: each
// rank scales its own input first with premulCopy (PyTorch: "multiplies inputs
// by a given scalar locally before reduction").
void reduceN(void* out, const void* const* srcs, int n, size_t count, DType dtype, ReduceOp op);

// reduceN into `out` and the same values into `copy` (must not alias anything):
// one pass for the float32/float64 SUM, AVG and PREMUL_SUM, so the shm
// all-reduce publishes its reduced part while writing its output instead of
// reading it back (Note [shm large messages]).
void reduceNAndCopy(void* out, void* copy, const void* const* srcs, int n, size_t count,
                    DType dtype, ReduceOp op);

// acc[i] = reduce(acc[i], src[i]) (a two-input step; AVG and PREMUL_SUM act as SUM,
// finish AVG with scaleInPlace(1/n)).
void reduceInto(void* acc, const void* src, size_t count, DType dtype, ReduceOp op);

// dst[i] = src[i] * scalar (floating dtypes) — the PREMUL_SUM pre-scaling.
void premulCopy(void* dst, const void* src, size_t count, DType dtype, double scalar);

// data[i] *= factor (floating dtypes).
void scaleInPlace(void* data, size_t count, DType dtype, double factor);

// Copies `count` elements, applying PREMUL_SUM's scalar when op is PREMUL_SUM
// (a memcpy otherwise). The one call a backend makes to stage its input.
void stageInput(void* dst, const void* src, size_t count, DType dtype, ReduceOp op);

}  // namespace distlab::comm
