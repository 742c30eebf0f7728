// Unary math and activations (out of place and in place), pow and clamp.
#include <cmath>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/binary_ops.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

using detail::floatResult;
using detail::OpMathT;

template <typename Fn>
auto factoryOf(Fn fn) {
  return [fn](auto tag) {
    using M = OpMathT<decltype(tag)>;
    return [fn](M u) { return static_cast<M>(fn(u)); };
  };
}

// Floating-point functions: integer and bool inputs compute in float32.
template <typename Fn>
Tensor floatUnary(const char* op, const Tensor& t, Fn fn) {
  return detail::unaryOutOfPlace(op, t, floatResult(t.dtype()), factoryOf(fn));
}

const auto kNeg = [](auto u) { return -u; };
const auto kRelu = [](auto u) { return u < 0 ? decltype(u){0} : u; };  // keeps NaN
const auto kSqrt = [](auto u) { return std::sqrt(u); };

void checkNotBool(const char* op, DType dtype) {
  if (dtype == DType::kBool) {
    throw Error(detail::concat(op, ": not supported on a bool tensor; use logical ops instead"));
  }
}

}  // namespace

Tensor Tensor::neg() const {
  checkNotBool("neg", dtype());
  return detail::unaryOutOfPlace("neg", *this, dtype(), factoryOf(kNeg));
}

Tensor Tensor::exp() const { return floatUnary("exp", *this, [](auto u) { return std::exp(u); }); }
Tensor Tensor::log() const { return floatUnary("log", *this, [](auto u) { return std::log(u); }); }
Tensor Tensor::sqrt() const { return floatUnary("sqrt", *this, kSqrt); }
Tensor Tensor::rsqrt() const {
  return floatUnary("rsqrt", *this, [](auto u) { return 1 / std::sqrt(u); });
}
Tensor Tensor::tanh() const {
  return floatUnary("tanh", *this, [](auto u) { return std::tanh(u); });
}
Tensor Tensor::sigmoid() const {
  return floatUnary("sigmoid", *this, [](auto u) { return 1 / (1 + std::exp(-u)); });
}
Tensor Tensor::gelu() const {
  return floatUnary("gelu", *this, [](auto u) {
    using M = decltype(u);
    return static_cast<M>(0.5) * u * (1 + std::erf(u * static_cast<M>(M_SQRT1_2)));
  });
}

Tensor Tensor::abs() const {
  return detail::unaryOutOfPlace("abs", *this, dtype(), factoryOf([](auto u) {
                                   return u < 0 ? -u : u;
                                 }));
}

Tensor Tensor::sign() const {
  return detail::unaryOutOfPlace("sign", *this, dtype(), factoryOf([](auto u) {
                                   using M = decltype(u);
                                   return u > 0 ? M(1) : (u < 0 ? static_cast<M>(-1) : M(0));
                                 }));
}

Tensor Tensor::relu() const {
  checkNotBool("relu", dtype());
  return detail::unaryOutOfPlace("relu", *this, dtype(), factoryOf(kRelu));
}

Tensor Tensor::pow(Scalar exponent) const {
  const DType dt = detail::resultType(*this, exponent);
  if (!isFloatingPoint(dt)) {
    const int64_t e = exponent.toInt();
    if (e < 0) {
      throw ValueError(detail::concat("pow: integers to negative integer powers are not allowed ",
                                      "(exponent ", e, ")"));
    }
    return detail::unaryOutOfPlace("pow", *this, dt, factoryOf([e](auto u) {
                                     decltype(u) r = 1;
                                     for (int64_t i = 0; i < e; ++i) r = r * u;
                                     return r;
                                   }),
                                   {static_cast<double>(e)});
  }
  const double p = exponent.toDouble();
  if (p == 2.0) return detail::unaryOutOfPlace("pow", *this, dt, factoryOf([](auto u) {
                                                  return u * u;
                                                }),
                                                {2.0});
  if (p == 1.0) return to(dt).clone();
  if (p == 0.5) return detail::unaryOutOfPlace("pow", *this, dt, factoryOf(kSqrt), {0.5});
  return detail::unaryOutOfPlace("pow", *this, dt, factoryOf([p](auto u) {
                                   return std::pow(u, static_cast<decltype(u)>(p));
                                 }),
                                 {p});
}

Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  if (!min && !max) throw ValueError("clamp: at least one of min or max must be given");
  DType dt = dtype();
  if (min) dt = promoteTypes(dt, detail::resultType(*this, *min));
  if (max) dt = promoteTypes(dt, detail::resultType(*this, *max));
  return to(dt).clone().clamp_(min, max);
}

Tensor& Tensor::neg_() {
  checkNotBool("neg_", dtype());
  return detail::unaryInPlace("neg_", *this, factoryOf(kNeg));
}

Tensor& Tensor::relu_() {
  checkNotBool("relu_", dtype());
  return detail::unaryInPlace("relu_", *this, factoryOf(kRelu));
}

Tensor& Tensor::sqrt_() {
  detail::checkInplaceCast("sqrt_", floatResult(dtype()), dtype());
  return detail::unaryInPlace("sqrt_", *this, factoryOf(kSqrt));
}

Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) {
  if (!min && !max) throw ValueError("clamp_: at least one of min or max must be given");
  if (min) detail::checkInplaceCast("clamp_", detail::resultType(*this, *min), dtype());
  if (max) detail::checkInplaceCast("clamp_", detail::resultType(*this, *max), dtype());
  const Scalar lo = min.value_or(Scalar(0));
  const Scalar hi = max.value_or(Scalar(0));
  const bool hasLo = min.has_value();
  const bool hasHi = max.has_value();
  return detail::unaryInPlace("clamp_", *this, [=](auto tag) {
    using M = OpMathT<decltype(tag)>;
    const M l = detail::scalarOpMath<decltype(tag)>(lo);
    const M h = detail::scalarOpMath<decltype(tag)>(hi);
    // NaN stays NaN; with min > max every element becomes max (as in PyTorch).
    return [=](M u) {
      if (u != u) return u;
      if (hasLo && u < l) u = l;
      if (hasHi && u > h) u = h;
      return u;
    };
  }, {hasLo ? lo.toDouble() : -INFINITY, hasHi ? hi.toDouble() : INFINITY});
}

}  // namespace distlab
