#pragma once
// Element conversions and compute types shared by the CPU kernels.
#include <cstdint>
#include <type_traits>

#include "runtime/tensor/dtype.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::detail {

template <typename T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The type arithmetic on T is done in: float for the 16-bit floats (PyTorch's
// "opmath" type), int64 for bool (so true + true is 2 before the cast back), T otherwise.
template <typename T>
struct OpMath {
  using type = T;
};
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <> struct OpMath<bool> { using type = int64_t; };
template <typename T>
using OpMathT = typename OpMath<T>::type;

// Converts between element types with C++ semantics, routing the 16-bit floats
// through float and mapping "nonzero" to true for bool.
template <typename To, typename From>
inline To castTo(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (kIsHalfLike<From>) {
      return static_cast<float>(value) != 0.0f;
    } else {
      return value != From{};
    }
  } else if constexpr (kIsHalfLike<From>) {
    return castTo<To>(static_cast<float>(value));
  } else if constexpr (kIsHalfLike<To>) {
    return To(static_cast<float>(value));
  } else {
    return static_cast<To>(value);
  }
}

// A Scalar as element type T: integers stay exact for integral T.
template <typename T>
inline T scalarAs(const Scalar& s) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return s.isIntegral() ? static_cast<T>(s.toInt()) : static_cast<T>(s.toDouble());
  } else if constexpr (std::is_same_v<T, bool>) {
    return s.toDouble() != 0.0;
  } else {
    return castTo<T>(s.toDouble());
  }
}

// Scalar in the compute type of T.
template <typename T>
inline OpMathT<T> scalarOpMath(const Scalar& s) {
  if constexpr (std::is_same_v<T, bool>) {
    return s.toInt();
  } else {
    return scalarAs<OpMathT<T>>(s);
  }
}

}  // namespace distlab::detail
