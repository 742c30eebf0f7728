// Binary arithmetic: add/sub/mul/div, maximum/minimum, tensor and scalar forms,
// out of place (broadcasting, type promotion) and in place.
#include <cmath>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/binary_ops.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

using detail::OpMathT;

void checkAlpha(const char* op, DType dtype, const Scalar& alpha) {
  if (!isFloatingPoint(dtype) && !alpha.isIntegral()) {
    throw ValueError(detail::concat(op, ": for integral input tensors, argument alpha must not ",
                                    "be a floating point number (got ", alpha.toDouble(), ")"));
  }
}

void checkBoolSub(const char* op, DType a, DType b) {
  if (a == DType::kBool && b == DType::kBool) {
    throw Error(detail::concat(op, ": subtraction with two bool tensors is not supported; ",
                               "to invert a mask use logicalNot/bitwiseXor"));
  }
}

// a + alpha * b (alpha = -alpha for sub).
auto addFactory(Scalar alpha) {
  return [alpha](auto tag) {
    using M = OpMathT<decltype(tag)>;
    const M k = detail::scalarOpMath<decltype(tag)>(alpha);
    // k * v is exact for k == 1, so one form serves every alpha.
    return [k](M u, M v) { return static_cast<M>(u + k * v); };
  };
}

template <typename Fn>
auto scalarFactory(Scalar s, Fn fn) {
  return [s, fn](auto tag) {
    using M = OpMathT<decltype(tag)>;
    const M v = detail::scalarOpMath<decltype(tag)>(s);
    return [v, fn](M u) { return static_cast<M>(fn(u, v)); };
  };
}

template <typename Fn>
auto tensorFactory(Fn fn) {
  return [fn](auto tag) {
    using M = OpMathT<decltype(tag)>;
    return [fn](M u, M v) { return static_cast<M>(fn(u, v)); };
  };
}

const auto kPlus = [](auto u, auto v) { return u + v; };
const auto kMinus = [](auto u, auto v) { return u - v; };
const auto kTimes = [](auto u, auto v) { return u * v; };
const auto kDivide = [](auto u, auto v) { return u / v; };
// maximum/minimum propagate NaN like PyTorch.
const auto kMax = [](auto u, auto v) { return u != u ? u : (v != v ? v : (u > v ? u : v)); };
const auto kMin = [](auto u, auto v) { return u != u ? u : (v != v ? v : (u < v ? u : v)); };

Scalar negate(const Scalar& s) {
  return s.isIntegral() ? Scalar(-s.toInt()) : Scalar(-s.toDouble());
}

}  // namespace

Tensor Tensor::add(const Tensor& other, Scalar alpha) const {
  const DType dt = detail::resultType(*this, other);
  checkAlpha("add", dt, alpha);
  return detail::binaryOutOfPlace("add", *this, other, dt, addFactory(alpha),
                                  {alpha.toDouble()});
}

Tensor Tensor::sub(const Tensor& other, Scalar alpha) const {
  checkBoolSub("sub", dtype(), other.dtype());
  const DType dt = detail::resultType(*this, other);
  checkAlpha("sub", dt, alpha);
  return detail::binaryOutOfPlace("sub", *this, other, dt, addFactory(negate(alpha)),
                                  {-alpha.toDouble()});
}

Tensor Tensor::mul(const Tensor& other) const {
  return detail::binaryOutOfPlace("mul", *this, other, detail::resultType(*this, other),
                                  tensorFactory(kTimes));
}

Tensor Tensor::div(const Tensor& other) const {
  return detail::binaryOutOfPlace("div", *this, other,
                                  detail::floatResult(detail::resultType(*this, other)),
                                  tensorFactory(kDivide));
}

Tensor Tensor::maximum(const Tensor& other) const {
  return detail::binaryOutOfPlace("maximum", *this, other, detail::resultType(*this, other),
                                  tensorFactory(kMax));
}

Tensor Tensor::minimum(const Tensor& other) const {
  return detail::binaryOutOfPlace("minimum", *this, other, detail::resultType(*this, other),
                                  tensorFactory(kMin));
}

Tensor Tensor::add(Scalar other) const {
  return detail::unaryOutOfPlace("add", *this, detail::resultType(*this, other),
                                 scalarFactory(other, kPlus), {other.toDouble()});
}

Tensor Tensor::sub(Scalar other) const {
  if (dtype() == DType::kBool && other.isIntegral()) checkBoolSub("sub", dtype(), DType::kBool);
  return detail::unaryOutOfPlace("sub", *this, detail::resultType(*this, other),
                                 scalarFactory(other, kMinus), {other.toDouble()});
}

Tensor Tensor::mul(Scalar other) const {
  return detail::unaryOutOfPlace("mul", *this, detail::resultType(*this, other),
                                 scalarFactory(other, kTimes), {other.toDouble()});
}

Tensor Tensor::div(Scalar other) const {
  return detail::unaryOutOfPlace("div", *this, detail::floatResult(detail::resultType(*this, other)),
                                 scalarFactory(other, kDivide), {other.toDouble()});
}

// ---- in place ------------------------------------------------------------------

Tensor& Tensor::add_(const Tensor& other, Scalar alpha) {
  checkAlpha("add_", dtype(), alpha);
  return detail::binaryInPlace("add_", *this, other, detail::resultType(*this, other),
                               addFactory(alpha),
                                  {alpha.toDouble()});
}

Tensor& Tensor::sub_(const Tensor& other, Scalar alpha) {
  checkBoolSub("sub_", dtype(), other.dtype());
  checkAlpha("sub_", dtype(), alpha);
  return detail::binaryInPlace("sub_", *this, other, detail::resultType(*this, other),
                               addFactory(negate(alpha)),
                                  {-alpha.toDouble()});
}

Tensor& Tensor::mul_(const Tensor& other) {
  return detail::binaryInPlace("mul_", *this, other, detail::resultType(*this, other),
                               tensorFactory(kTimes));
}

Tensor& Tensor::div_(const Tensor& other) {
  return detail::binaryInPlace("div_", *this, other,
                               detail::floatResult(detail::resultType(*this, other)),
                               tensorFactory(kDivide));
}

Tensor& Tensor::maximum_(const Tensor& other) {
  return detail::binaryInPlace("maximum_", *this, other, detail::resultType(*this, other),
                               tensorFactory(kMax));
}

Tensor& Tensor::minimum_(const Tensor& other) {
  return detail::binaryInPlace("minimum_", *this, other, detail::resultType(*this, other),
                               tensorFactory(kMin));
}

Tensor& Tensor::add_(Scalar other) {
  detail::checkInplaceCast("add_", detail::resultType(*this, other), dtype());
  return detail::unaryInPlace("add_", *this, scalarFactory(other, kPlus), {other.toDouble()});
}

Tensor& Tensor::mul_(Scalar other) {
  detail::checkInplaceCast("mul_", detail::resultType(*this, other), dtype());
  return detail::unaryInPlace("mul_", *this, scalarFactory(other, kTimes), {other.toDouble()});
}

Tensor& Tensor::div_(Scalar other) {
  detail::checkInplaceCast("div_", detail::floatResult(detail::resultType(*this, other)), dtype());
  return detail::unaryInPlace("div_", *this, scalarFactory(other, kDivide), {other.toDouble()});
}

}  // namespace distlab
