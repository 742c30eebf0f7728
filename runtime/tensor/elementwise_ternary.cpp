// Fused in-place updates used by optimizers: addcmul_, addcdiv_, lerp_.
#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/binary_ops.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

using detail::OpMathT;

// Brings `t` to self's dtype and shape (broadcast), checking the promotion.
Tensor operandFor(const char* op, const Tensor& self, const Tensor& t) {
  detail::checkDefined(op, t);
  detail::checkSameDevice(op, self, t);
  detail::checkInplaceCast(op, detail::resultType(self, t), self.dtype());
  if (t.sizes() != self.sizes()) {
    const Shape shape = detail::broadcastFor(op, self.sizes(), t.sizes());
    if (shape != self.sizes()) {
      throw Error(detail::concat(op, ": output with shape ", shapeToString(self.sizes()),
                                 " doesn't match the broadcast shape ", shapeToString(shape)));
    }
  }
  return detail::expandTo(t.to(self.device()).to(self.dtype()), self.sizes());
}

template <typename Fn>
Tensor& fused(const char* op, Tensor& self, const Tensor& a, const Tensor& b, Scalar value,
              Fn fn) {
  detail::checkDefined(op, self);
  const Tensor x = operandFor(op, self, a);
  const Tensor y = operandFor(op, self, b);
  if (!isFloatingPoint(self.dtype()) && !value.isIntegral()) {
    throw ValueError(detail::concat(op, ": for integral tensors, value must be an integer (got ",
                                    value.toDouble(), ")"));
  }
  if (!self.device().isCpu()) {
    // Device kernel `op`: {self} = f({self, x, y}, value), x and y broadcast.
    runKernel(self.device(), op, {self}, {self, x, y}, {value.toDouble()});
    return self;
  }
  dispatchDType(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using M = OpMathT<T>;
    const M k = detail::scalarOpMath<T>(value);
    detail::ternaryKernel<T>(self, self, x, y, [k, fn](T s, T u, T v) {
      return detail::castTo<T>(fn(static_cast<M>(s), static_cast<M>(u), static_cast<M>(v), k));
    });
  });
  return self;
}

}  // namespace

Tensor& Tensor::addcmul_(const Tensor& a, const Tensor& b, Scalar value) {
  return fused("addcmul_", *this, a, b, value,
               [](auto s, auto u, auto v, auto k) { return s + k * u * v; });
}

Tensor& Tensor::addcdiv_(const Tensor& a, const Tensor& b, Scalar value) {
  if (!isFloatingPoint(dtype())) {
    throw Error(detail::concat("addcdiv_: integer division is not supported; self has dtype ",
                               dtypeName(dtype())));
  }
  return fused("addcdiv_", *this, a, b, value,
               [](auto s, auto u, auto v, auto k) { return s + k * u / v; });
}

Tensor& Tensor::lerp_(const Tensor& end, Scalar weight) {
  if (!isFloatingPoint(dtype())) {
    throw Error(detail::concat("lerp_: expects a floating point tensor, got ",
                               dtypeName(dtype())));
  }
  // PyTorch's two-sided form: exact at weight 0 and 1.
  return fused("lerp_", *this, end, end, weight, [](auto s, auto e, auto, auto w) {
    using M = decltype(s);
    return w < M(0.5) ? s + w * (e - s) : e - (e - s) * (M(1) - w);
  });
}

}  // namespace distlab
