#pragma once
// Drivers shared by the elementwise .cpp files: broadcasting, type promotion
// and dispatch around detail::binaryKernel / unaryKernel. `factory(tag)`
// returns the scalar functor for element type decltype(tag); it works on
// OpMathT<T> values (float for the half types). On a device other than the
// CPU the drivers allocate the result there and run the device's kernel for
// `op` (Note [Device dispatch]) with `params` as its scalars: the operation's
// numeric parameters (alpha, the scalar operand, exponent, bounds).
#include <initializer_list>
#include <type_traits>

#include "runtime/tensor/detail/convert.hpp"
#include "runtime/tensor/detail/elementwise.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/dispatch.hpp"

namespace distlab::detail {

inline Tensor expandTo(const Tensor& t, const Shape& shape) {
  return t.sizes() == shape ? t : t.expand(shape);
}

// out = f(a, b) computed in `compute` dtype, stored as `compute` (or as bool
// when kBoolOut, for comparisons).
template <bool kBoolOut = false, typename Factory>
Tensor binaryOutOfPlace(const char* op, const Tensor& a, const Tensor& b, DType compute,
                        Factory factory, std::initializer_list<double> params = {}) {
  const DType outDtype = kBoolOut ? DType::kBool : compute;
  checkDefined(op, a);
  checkDefined(op, b);
  checkSameDevice(op, a, b);
  const Shape shape = broadcastFor(op, a.sizes(), b.sizes());
  const Device device = commonDevice(a, b);
  const Tensor x = expandTo(a.to(device).to(compute), shape);
  const Tensor y = expandTo(b.to(device).to(compute), shape);
  Tensor out = makeEmpty(shape, outDtype, device);
  if (!device.isCpu()) {
    runKernel(device, op, {out}, {x, y}, params);
    return out;
  }
  dispatchDType(compute, [&](auto tag) {
    using T = decltype(tag);
    using M = OpMathT<T>;
    using O = std::conditional_t<kBoolOut, bool, T>;
    auto f = factory(tag);
    binaryKernel<O, T, T>(out, x, y, [f](T u, T v) {
      return castTo<O>(f(static_cast<M>(u), static_cast<M>(v)));
    });
  });
  return out;
}

// self = f(self, other) in self's dtype; other must broadcast to self's shape.
template <typename Factory>
Tensor& binaryInPlace(const char* op, Tensor& self, const Tensor& other, DType result,
                      Factory factory, std::initializer_list<double> params = {}) {
  checkDefined(op, self);
  checkDefined(op, other);
  checkSameDevice(op, self, other);
  checkInplaceCast(op, result, self.dtype());
  if (other.sizes() != self.sizes()) {
    const Shape shape = broadcastFor(op, self.sizes(), other.sizes());
    if (shape != self.sizes()) {
      throw Error(concat(op, ": output with shape ", shapeToString(self.sizes()),
                         " doesn't match the broadcast shape ", shapeToString(shape)));
    }
  }
  const Tensor y = expandTo(other.to(self.device()).to(self.dtype()), self.sizes());
  if (!self.device().isCpu()) {
    runKernel(self.device(), op, {self}, {self, y}, params);
    return self;
  }
  dispatchDType(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using M = OpMathT<T>;
    auto f = factory(tag);
    binaryKernel<T, T, T>(self, self, y, [f](T u, T v) {
      return castTo<T>(f(static_cast<M>(u), static_cast<M>(v)));
    });
  });
  return self;
}

// out = f(a) computed and stored in `compute` (bool when kBoolOut). The
// factory gets the compute type's tag.
template <bool kBoolOut = false, typename Factory>
Tensor unaryOutOfPlace(const char* op, const Tensor& a, DType compute, Factory factory,
                       std::initializer_list<double> params = {}) {
  const DType outDtype = kBoolOut ? DType::kBool : compute;
  checkDefined(op, a);
  const Tensor x = a.to(compute);
  Tensor out = makeEmpty(a.sizes(), outDtype, a.device());
  if (!a.device().isCpu()) {
    runKernel(a.device(), op, {out}, {x}, params);
    return out;
  }
  dispatchDType(compute, [&](auto tag) {
    using T = decltype(tag);
    using M = OpMathT<T>;
    using O = std::conditional_t<kBoolOut, bool, T>;
    auto f = factory(tag);
    unaryKernel<O, T>(out, x, [f](T u) { return castTo<O>(f(static_cast<M>(u))); });
  });
  return out;
}

// The dtype a floating-point function computes and returns in: floating inputs keep
// theirs, integer and bool inputs give float32 (PyTorch's default float dtype).
inline DType floatResult(DType d) { return isFloatingPoint(d) ? d : DType::kFloat32; }

// self = f(self) in self's dtype.
template <typename Factory>
Tensor& unaryInPlace(const char* op, Tensor& self, Factory factory,
                     std::initializer_list<double> params = {}) {
  checkDefined(op, self);
  if (!self.device().isCpu()) {
    runKernel(self.device(), op, {self}, {self}, params);
    return self;
  }
  dispatchDType(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using M = OpMathT<T>;
    auto f = factory(tag);
    unaryKernel<T, T>(self, self, [f](T u) { return castTo<T>(f(static_cast<M>(u))); });
  });
  return self;
}

}  // namespace distlab::detail
