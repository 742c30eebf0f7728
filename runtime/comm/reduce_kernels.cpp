#include "runtime/comm/reduce_kernels.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "runtime/core/errors.hpp"

namespace distlab::comm {
namespace {

// The arithmetic type a reduction runs in: half types widen to float.
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T>
constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                          std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <typename A>
A combine(A a, A b, ReduceOp::Kind kind) {
  if constexpr (std::is_same_v<A, bool>) {
    switch (kind) {
      case ReduceOp::kProduct:
      case ReduceOp::kMin:
      case ReduceOp::kBand: return a && b;
      case ReduceOp::kBxor: return a != b;
      default: return a || b;  // SUM, MAX, BOR
    }
  } else {
    switch (kind) {
      case ReduceOp::kProduct: return static_cast<A>(a * b);
      case ReduceOp::kMin: return std::min(a, b);
      case ReduceOp::kMax: return std::max(a, b);
      case ReduceOp::kBand:
        if constexpr (!kIsFloat<A>) return static_cast<A>(a & b);
        break;
      case ReduceOp::kBor:
        if constexpr (!kIsFloat<A>) return static_cast<A>(a | b);
        break;
      case ReduceOp::kBxor:
        if constexpr (!kIsFloat<A>) return static_cast<A>(a ^ b);
        break;
      default: break;
    }
    return static_cast<A>(a + b);  // SUM, AVG, PREMUL_SUM
  }
}

template <typename T>
void reduceNTyped(T* out, const void* const* srcs, int n, size_t count, ReduceOp op) {
  using A = Acc<T>;
  const ReduceOp::Kind kind = op.kind;
  for (size_t i = 0; i < count; ++i) {
    A acc = static_cast<A>(static_cast<const T*>(srcs[0])[i]);
    for (int s = 1; s < n; ++s) {
      acc = combine<A>(acc, static_cast<A>(static_cast<const T*>(srcs[s])[i]), kind);
    }
    if constexpr (kIsFloat<T>) {
      if (kind == ReduceOp::kAvg) acc = static_cast<A>(acc / static_cast<A>(n));
    }
    out[i] = static_cast<T>(acc);
  }
}

// Note [vectorised sums]: GCC 12 leaves reduceNTyped's loop scalar, one float
// per instruction (the single-copy allreduce spent more time in it than in
// the kernel's copies, reports/collectives_shm_notes.md, eighth round): the
// elements are its outer loop, the sources the inner one, and `out` may alias
// a source. The dynamic cost model of Note [Vectorising at -O2]
// (CMakeLists.txt) does not change that: -fopt-info-vec reports no loop of
// this file vectorised. The float SUMs -- what DDP, FSDP and ZeRO reduce --
// are written with vector extensions instead: two 16-byte blocks per step,
// each loaded from every source before it is stored, so an aliased `out` is
// safe. Each lane takes the same IEEE operations in the
// same source order as the scalar loop (acc = s0; acc += s1; ...; AVG:
// acc / n), so the results are bitwise those of reduceNTyped; the elements
// after the last whole block take the same steps one at a time.
template <typename T>
struct Block {
  // 16 bytes is an SSE2 register (the x86-64 baseline); two per step keep two
  // independent additions in flight. GCC lowers a wider generic vector through
  // the stack when AVX is not enabled.
  typedef T Vec __attribute__((vector_size(16)));
  // The same vector at the element's alignment and allowed to alias T: an
  // unaligned load or store that keeps the values in registers (through
  // memcpy GCC 12 keeps the accumulators on the stack).
  typedef T Unaligned __attribute__((vector_size(16), aligned(alignof(T)), may_alias));
  static constexpr size_t kLanes = sizeof(Vec) / sizeof(T);
  static constexpr size_t kStep = 2 * kLanes;
  static Vec load(const void* base, size_t i) {
    return *reinterpret_cast<const Unaligned*>(static_cast<const T*>(base) + i);
  }
  static void store(T* base, size_t i, Vec v) { *reinterpret_cast<Unaligned*>(base + i) = v; }
};

// out[i] (and copy[i] when not null) = the SUM (AVG with `average`) of the n
// sources, in source order: whole blocks, then the elements left one by one.
template <typename T>
void sumInOrder(T* out, T* copy, const void* const* srcs, int n, size_t count, bool average) {
  using B = Block<T>;
  size_t i = 0;
  for (; i + B::kStep <= count; i += B::kStep) {
    typename B::Vec low = B::load(srcs[0], i);
    typename B::Vec high = B::load(srcs[0], i + B::kLanes);
    for (int s = 1; s < n; ++s) {
      low += B::load(srcs[s], i);
      high += B::load(srcs[s], i + B::kLanes);
    }
    if (average) {
      low /= static_cast<T>(n);
      high /= static_cast<T>(n);
    }
    B::store(out, i, low);
    B::store(out, i + B::kLanes, high);
    if (copy != nullptr) {
      B::store(copy, i, low);
      B::store(copy, i + B::kLanes, high);
    }
  }
  for (; i < count; ++i) {
    T acc = static_cast<const T*>(srcs[0])[i];
    for (int s = 1; s < n; ++s) acc += static_cast<const T*>(srcs[s])[i];
    if (average) acc /= static_cast<T>(n);
    out[i] = acc;
    if (copy != nullptr) copy[i] = acc;
  }
}

// The float32/float64 SUM, AVG and PREMUL_SUM of reduceN (and of
// reduceNAndCopy, with `copy`). False, having done nothing, for anything else.
bool vectorisedSum(void* out, void* copy, const void* const* srcs, int n, size_t count,
                   DType dtype, ReduceOp op) {
  const bool average = op.kind == ReduceOp::kAvg;
  if (op.kind != ReduceOp::kSum && op.kind != ReduceOp::kPremulSum && !average) return false;
  if (dtype == DType::kFloat32) {
    sumInOrder(static_cast<float*>(out), static_cast<float*>(copy), srcs, n, count, average);
    return true;
  }
  if (dtype == DType::kFloat64) {
    sumInOrder(static_cast<double*>(out), static_cast<double*>(copy), srcs, n, count, average);
    return true;
  }
  return false;
}

}  // namespace

bool isReduceOpSupported(ReduceOp op, DType dtype) {
  switch (op.kind) {
    case ReduceOp::kSum:
    case ReduceOp::kProduct:
    case ReduceOp::kMin:
    case ReduceOp::kMax: return true;
    case ReduceOp::kAvg:
    case ReduceOp::kPremulSum: return isFloatingPoint(dtype);
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor: return isIntegral(dtype) || dtype == DType::kBool;
  }
  return false;
}

void checkReduceOpSupported(ReduceOp op, DType dtype, std::string_view where) {
  if (!isReduceOpSupported(op, dtype)) {
    throw ValueError(std::string(where) + ": ReduceOp " + std::string(reduceOpName(op)) +
                     " is not defined for dtype " + std::string(dtypeName(dtype)));
  }
}

void reduceNAndCopy(void* out, void* copy, const void* const* srcs, int n, size_t count,
                    DType dtype, ReduceOp op) {
  if (count == 0 || n <= 0) return;
  if (vectorisedSum(out, copy, srcs, n, count, dtype, op)) return;
  reduceN(out, srcs, n, count, dtype, op);
  std::memcpy(copy, out, count * elementSize(dtype));
}

void reduceN(void* out, const void* const* srcs, int n, size_t count, DType dtype, ReduceOp op) {
  if (count == 0 || n <= 0) return;
  if (vectorisedSum(out, nullptr, srcs, n, count, dtype, op)) return;
  dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    reduceNTyped<T>(static_cast<T*>(out), srcs, n, count, op);
  });
}

void reduceInto(void* acc, const void* src, size_t count, DType dtype, ReduceOp op) {
  ReduceOp step = op;
  if (op.kind == ReduceOp::kAvg || op.kind == ReduceOp::kPremulSum) step = ReduceOp::kSum;
  const void* srcs[2] = {acc, src};
  reduceN(acc, srcs, 2, count, dtype, step);
}

void premulCopy(void* dst, const void* src, size_t count, DType dtype, double scalar) {
  dispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      using A = Acc<T>;
      const T* s = static_cast<const T*>(src);
      T* d = static_cast<T*>(dst);
      const A k = static_cast<A>(scalar);
      for (size_t i = 0; i < count; ++i) d[i] = static_cast<T>(static_cast<A>(s[i]) * k);
    } else {
      throw ValueError(std::string("premulCopy: dtype ") + std::string(dtypeName(dtype)) +
                       " is not floating point");
    }
  });
}

void scaleInPlace(void* data, size_t count, DType dtype, double factor) {
  premulCopy(data, data, count, dtype, factor);
}

void stageInput(void* dst, const void* src, size_t count, DType dtype, ReduceOp op) {
  if (op.kind == ReduceOp::kPremulSum) {
    premulCopy(dst, src, count, dtype, op.scalar);
  } else if (dst != src && count > 0) {
    std::memcpy(dst, src, count * elementSize(dtype));
  }
}

}  // namespace distlab::comm
