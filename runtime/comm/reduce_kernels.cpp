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

// Fast path for the common case: SUM of two float arrays (vectorises).
template <typename T>
void sum2(T* out, const T* a, const T* b, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void sum2Twice(T* out, T* copy, const T* a, const T* b, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = copy[i] = a[i] + b[i];
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
  if (n == 2 && (op.kind == ReduceOp::kSum || op.kind == ReduceOp::kPremulSum)) {
    if (dtype == DType::kFloat32) {
      return sum2Twice(static_cast<float*>(out), static_cast<float*>(copy),
                       static_cast<const float*>(srcs[0]), static_cast<const float*>(srcs[1]),
                       count);
    }
    if (dtype == DType::kFloat64) {
      return sum2Twice(static_cast<double*>(out), static_cast<double*>(copy),
                       static_cast<const double*>(srcs[0]), static_cast<const double*>(srcs[1]),
                       count);
    }
  }
  reduceN(out, srcs, n, count, dtype, op);
  std::memcpy(copy, out, count * elementSize(dtype));
}

void reduceN(void* out, const void* const* srcs, int n, size_t count, DType dtype, ReduceOp op) {
  if (count == 0 || n <= 0) return;
  if (n == 2 && (op.kind == ReduceOp::kSum || op.kind == ReduceOp::kPremulSum)) {
    if (dtype == DType::kFloat32) {
      return sum2(static_cast<float*>(out), static_cast<const float*>(srcs[0]),
                  static_cast<const float*>(srcs[1]), count);
    }
    if (dtype == DType::kFloat64) {
      return sum2(static_cast<double*>(out), static_cast<const double*>(srcs[0]),
                  static_cast<const double*>(srcs[1]), count);
    }
  }
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
