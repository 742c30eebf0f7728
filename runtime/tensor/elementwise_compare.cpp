// Comparisons (bool results), bitwise ops, maskedFill, equal and allclose.
#include <cmath>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/binary_ops.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

using detail::OpMathT;

template <typename Fn>
Tensor compare(const char* op, const Tensor& a, const Tensor& b, Fn fn) {
  return detail::binaryOutOfPlace<true>(op, a, b, detail::resultType(a, b), [fn](auto tag) {
    using M = OpMathT<decltype(tag)>;
    return [fn](M u, M v) { return static_cast<M>(fn(u, v)); };
  });
}

template <typename Fn>
Tensor compare(const char* op, const Tensor& a, const Scalar& s, Fn fn) {
  // Compare in the promoted type so 1 < 1.5 holds for an int tensor.
  return detail::unaryOutOfPlace<true>(op, a, detail::resultType(a, s), [s, fn](auto tag) {
    using M = OpMathT<decltype(tag)>;
    const M v = detail::scalarOpMath<decltype(tag)>(s);
    return [v, fn](M u) { return static_cast<M>(fn(u, v)); };
  }, {s.toDouble()});
}

bool allTrue(const Tensor& mask) {
  const Tensor c = mask.contiguous();
  const bool* p = c.data<bool>();
  const int64_t n = c.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (!p[i]) return false;
  }
  return true;
}

const auto kEq = [](auto u, auto v) { return u == v; };
const auto kNe = [](auto u, auto v) { return u != v; };
const auto kGt = [](auto u, auto v) { return u > v; };
const auto kLt = [](auto u, auto v) { return u < v; };
const auto kGe = [](auto u, auto v) { return u >= v; };
const auto kLe = [](auto u, auto v) { return u <= v; };

template <typename Fn>
Tensor bitwise(const char* op, const Tensor& a, const Tensor& b, Fn fn) {
  const DType dt = detail::resultType(a, b);
  if (isFloatingPoint(dt)) {
    throw Error(detail::concat(op, ": not implemented for floating point dtype ", dtypeName(dt),
                               " (integral or bool tensors only)"));
  }
  return detail::binaryOutOfPlace(op, a, b, dt, [fn](auto tag) {
    using T = decltype(tag);
    using M = OpMathT<T>;
    return [fn](M u, M v) {
      if constexpr (std::is_integral_v<M>) {
        return static_cast<M>(fn(u, v));
      } else {
        return u;  // unreachable: floating dtypes are rejected above
      }
    };
  });
}

}  // namespace

Tensor Tensor::eq(const Tensor& other) const { return compare("eq", *this, other, kEq); }
Tensor Tensor::ne(const Tensor& other) const { return compare("ne", *this, other, kNe); }
Tensor Tensor::gt(const Tensor& other) const { return compare("gt", *this, other, kGt); }
Tensor Tensor::lt(const Tensor& other) const { return compare("lt", *this, other, kLt); }
Tensor Tensor::ge(const Tensor& other) const { return compare("ge", *this, other, kGe); }
Tensor Tensor::le(const Tensor& other) const { return compare("le", *this, other, kLe); }
Tensor Tensor::eq(Scalar other) const { return compare("eq", *this, other, kEq); }
Tensor Tensor::ne(Scalar other) const { return compare("ne", *this, other, kNe); }
Tensor Tensor::gt(Scalar other) const { return compare("gt", *this, other, kGt); }
Tensor Tensor::lt(Scalar other) const { return compare("lt", *this, other, kLt); }
Tensor Tensor::ge(Scalar other) const { return compare("ge", *this, other, kGe); }
Tensor Tensor::le(Scalar other) const { return compare("le", *this, other, kLe); }

Tensor Tensor::bitwiseAnd(const Tensor& other) const {
  return bitwise("bitwiseAnd", *this, other, [](auto u, auto v) { return u & v; });
}
Tensor Tensor::bitwiseOr(const Tensor& other) const {
  return bitwise("bitwiseOr", *this, other, [](auto u, auto v) { return u | v; });
}
Tensor Tensor::bitwiseXor(const Tensor& other) const {
  return bitwise("bitwiseXor", *this, other, [](auto u, auto v) { return u ^ v; });
}

Tensor Tensor::maskedFill(const Tensor& mask, Scalar value) const {
  Tensor out = clone();
  out.maskedFill_(mask, value);
  return out;
}

Tensor& Tensor::maskedFill_(const Tensor& mask, Scalar value) {
  detail::checkDefined("maskedFill_", *this);
  detail::checkDefined("maskedFill_", mask);
  detail::checkSameDevice("maskedFill_", *this, mask);
  if (mask.dtype() != DType::kBool) {
    throw ValueError(detail::concat("maskedFill_: expected a bool mask, got dtype ",
                                    dtypeName(mask.dtype())));
  }
  if (!isFloatingPoint(dtype()) && !value.isIntegral()) {
    throw ValueError(detail::concat("maskedFill_: cannot fill a ", dtypeName(dtype()),
                                    " tensor with the floating point value ", value.toDouble()));
  }
  const Shape shape = detail::broadcastFor("maskedFill_", sizes(), mask.sizes());
  if (shape != sizes()) {
    throw Error(detail::concat("maskedFill_: mask of shape ", shapeToString(mask.sizes()),
                               " cannot be broadcast to the tensor's shape ",
                               shapeToString(sizes())));
  }
  const Tensor m = detail::expandTo(mask.to(device()), sizes());
  if (!device().isCpu()) {
    runKernel(device(), "maskedFill_", {*this}, {*this, m}, {value.toDouble()});
    return *this;
  }
  dispatchDType(dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = detail::scalarAs<T>(value);
    detail::binaryKernel<T, T, bool>(*this, *this, m, [v](T u, bool b) { return b ? v : u; });
  });
  return *this;
}

bool Tensor::equal(const Tensor& other) const {
  const Tensor a = detail::hostValues("equal", *this);
  const Tensor b = detail::hostValues("equal", other);
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  return allTrue(a.eq(b));
}

bool Tensor::allclose(const Tensor& other, double rtol, double atol) const {
  const Tensor hostA = detail::hostValues("allclose", *this);
  const Tensor hostB = detail::hostValues("allclose", other);
  const Shape shape = detail::broadcastFor("allclose", sizes(), other.sizes());
  const Tensor a = detail::expandTo(hostA.to(DType::kFloat64), shape);
  const Tensor b = detail::expandTo(hostB.to(DType::kFloat64), shape);
  Tensor close = detail::makeEmpty(shape, DType::kBool);
  detail::binaryKernel<bool, double, double>(close, a, b, [rtol, atol](double x, double y) {
    if (x == y) return true;  // also equal infinities
    if (std::isnan(x) || std::isnan(y)) return false;
    return std::fabs(x - y) <= atol + rtol * std::fabs(y);
  });
  return allTrue(close);
}


}  // namespace distlab
