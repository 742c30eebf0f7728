#pragma once
// Typed elementwise loops over already-broadcast operands (Note [Strided iteration]).
// The functor is a template argument, so it inlines into the loop body.
#include <array>
#include <cstdint>
#include <type_traits>

#include "runtime/tensor/detail/strided_loop.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::detail {

// out[i] = f(in[i]); `in` has out's shape (broadcast views allowed).
template <typename O, typename I, typename F>
void unaryKernel(const Tensor& out, const Tensor& in, F f) {
  if (out.isContiguous() && in.isContiguous()) {
    O* o = static_cast<O*>(out.rawData());
    const I* a = static_cast<const I*>(in.rawData());
    const int64_t n = out.numel();
    if constexpr (std::is_same_v<O, I>) {
      if (o == a) {  // in place: one pointer, so no alias check stands in the way
        for (int64_t i = 0; i < n; ++i) o[i] = f(o[i]);
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
    return;
  }
  stridedLoop<2>(out.sizes(), {&out, &in}, [&](char** p, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(O) && s[1] == sizeof(I)) {
      O* o = reinterpret_cast<O*>(p[0]);
      const I* a = reinterpret_cast<const I*>(p[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
    } else if (s[1] == 0) {
      O* o = reinterpret_cast<O*>(p[0]);
      const O value = f(*reinterpret_cast<const I*>(p[1]));
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<O*>(p[0] + i * s[0]) = value;
      (void)o;
    } else {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<O*>(p[0] + i * s[0]) = f(*reinterpret_cast<const I*>(p[1] + i * s[1]));
      }
    }
  });
}

// out[i] = f(a[i], b[i]); a and b have out's shape (broadcast views allowed).
template <typename O, typename A, typename B, typename F>
void binaryKernel(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  if (out.isContiguous() && a.isContiguous() && b.isContiguous()) {
    O* o = static_cast<O*>(out.rawData());
    const A* x = static_cast<const A*>(a.rawData());
    const B* y = static_cast<const B*>(b.rawData());
    const int64_t n = out.numel();
    if constexpr (std::is_same_v<O, A>) {
      if (o == x) {  // in place
        for (int64_t i = 0; i < n; ++i) o[i] = f(o[i], y[i]);
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    return;
  }
  stridedLoop<3>(out.sizes(), {&out, &a, &b}, [&](char** p, const int64_t* s, int64_t n) {
    O* o = reinterpret_cast<O*>(p[0]);
    const A* x = reinterpret_cast<const A*>(p[1]);
    const B* y = reinterpret_cast<const B*>(p[2]);
    if (s[0] == sizeof(O) && s[1] == sizeof(A) && s[2] == sizeof(B)) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (s[0] == sizeof(O) && s[1] == sizeof(A) && s[2] == 0) {
      const B yv = *y;
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
    } else if (s[0] == sizeof(O) && s[1] == 0 && s[2] == sizeof(B)) {
      const A xv = *x;
      for (int64_t i = 0; i < n; ++i) o[i] = f(xv, y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<O*>(p[0] + i * s[0]) = f(*reinterpret_cast<const A*>(p[1] + i * s[1]),
                                                  *reinterpret_cast<const B*>(p[2] + i * s[2]));
      }
    }
  });
}

// out[i] = f(a[i], b[i], c[i]), all of element type T.
template <typename T, typename F>
void ternaryKernel(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, F f) {
  if (out.isContiguous() && a.isContiguous() && b.isContiguous() && c.isContiguous()) {
    T* o = static_cast<T*>(out.rawData());
    const T* x = static_cast<const T*>(a.rawData());
    const T* y = static_cast<const T*>(b.rawData());
    const T* z = static_cast<const T*>(c.rawData());
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i], z[i]);
    return;
  }
  stridedLoop<4>(out.sizes(), {&out, &a, &b, &c}, [&](char** p, const int64_t* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      *reinterpret_cast<T*>(p[0] + i * s[0]) = f(*reinterpret_cast<const T*>(p[1] + i * s[1]),
                                                *reinterpret_cast<const T*>(p[2] + i * s[2]),
                                                *reinterpret_cast<const T*>(p[3] + i * s[3]));
    }
  });
}

}  // namespace distlab::detail
