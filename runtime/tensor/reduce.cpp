// Reductions: sum, mean, prod, norm, var (Note [Reduction layout]).
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/convert.hpp"
#include "runtime/tensor/detail/reduce_plan.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace detail {

ReducePlan planReduction(const char* op, const Tensor& t, const Shape& dims, bool keepdim) {
  checkDefined(op, t);
  const int64_t ndim = t.dim();
  std::vector<bool> reduced(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrapDim(op, d, ndim);
    if (ndim == 0) continue;
    if (reduced[w]) {
      throw ValueError(concat(op, ": dim ", w, " appears multiple times in the list of dims ",
                              shapeToString(dims)));
    }
    reduced[w] = true;
  }
  ReducePlan p;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!reduced[d]) {
      p.outShape.push_back(t.sizes()[d]);
    } else if (keepdim) {
      p.outShape.push_back(1);
    }
  }
  // Is the reduced set one adjacent block of dims (ignoring size-1 dims)?
  int64_t first = -1, last = -1;
  bool block = true;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!reduced[d] || t.sizes()[d] == 1) continue;
    if (first < 0) first = d;
    for (int64_t k = last + 1; last >= 0 && k < d; ++k) block = block && t.sizes()[k] == 1;
    last = d;
  }
  if (t.isContiguous() && block) {
    p.input = t;
    for (int64_t d = 0; d < ndim; ++d) {
      const int64_t s = t.sizes()[d];
      if (s == 1) continue;
      if (reduced[d]) {
        p.reduce *= s;
      } else if (first < 0 || d < first) {
        p.outer *= s;
      } else {
        p.inner *= s;
      }
    }
    return p;
  }
  Shape perm;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!reduced[d]) {
      perm.push_back(d);
      p.outer *= t.sizes()[d];
    }
  }
  for (int64_t d = 0; d < ndim; ++d) {
    if (reduced[d]) {
      perm.push_back(d);
      p.reduce *= t.sizes()[d];
    }
  }
  p.input = t.permute(perm).contiguous();
  return p;
}

}  // namespace detail

namespace {

template <typename T>
using SumAcc = std::conditional_t<std::is_same_v<T, float> || std::is_same_v<T, double>, double,
                                  std::conditional_t<detail::kIsHalfLike<T>, float, int64_t>>;

DType sumDtype(DType d) { return isFloatingPoint(d) ? d : DType::kInt64; }

void checkFloatingInput(const char* op, DType dtype) {
  if (!isFloatingPoint(dtype)) {
    throw ValueError(detail::concat(op, ": input dtype must be a floating point dtype, got ",
                                    dtypeName(dtype)));
  }
}

// Folds with `op` in the accumulator type of T, then writes post(acc) into a
// new tensor of `outDtype`. Off the CPU, runs the device kernel `name` with
// ints {outer, reduce, inner} (Note [Reduction layout]) and `params`.
template <typename AccOf, typename OpFactory, typename Post>
Tensor foldInto(const char* name, const detail::ReducePlan& p, DType outDtype,
                OpFactory opFactory, Post post, std::initializer_list<double> params = {}) {
  Tensor out = detail::makeEmpty(p.outShape, outDtype, p.input.device());
  if (!out.device().isCpu()) {
    runKernel(out.device(), name, {out}, {p.input}, params, {p.outer, p.reduce, p.inner});
    return out;
  }
  dispatchDType(p.input.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = typename AccOf::template type<T>;
    std::vector<Acc> acc(static_cast<size_t>(p.outer * p.inner));
    const auto [init, op] = opFactory(Acc{});
    detail::foldReduce<Acc>(static_cast<const T*>(p.input.rawData()), p, init, op, acc.data());
    dispatchDType(outDtype, [&](auto outTag) {
      using O = decltype(outTag);
      O* dst = static_cast<O*>(out.rawData());
      for (size_t i = 0; i < acc.size(); ++i) dst[i] = detail::castTo<O>(post(acc[i]));
    });
  });
  return out;
}

struct SumAccOf {
  template <typename T>
  using type = SumAcc<T>;
};

const auto kSumOp = [](auto zero) {
  using A = decltype(zero);
  return std::make_pair(A{0}, [](A a, A b) { return static_cast<A>(a + b); });
};
const auto kProdOp = [](auto zero) {
  using A = decltype(zero);
  return std::make_pair(A{1}, [](A a, A b) { return static_cast<A>(a * b); });
};
const auto kIdentity = [](auto a) { return a; };

}  // namespace

Tensor Tensor::sum(const Shape& dims, bool keepdim) const {
  const auto p = detail::planReduction("sum", *this, dims, keepdim);
  return foldInto<SumAccOf>("sum", p, sumDtype(dtype()), kSumOp, kIdentity);
}

Tensor Tensor::mean(const Shape& dims, bool keepdim) const {
  checkFloatingInput("mean", dtype());
  const auto p = detail::planReduction("mean", *this, dims, keepdim);
  const double count = static_cast<double>(p.reduce);
  return foldInto<SumAccOf>("mean", p, dtype(), kSumOp, [count](auto a) {
    return static_cast<decltype(a)>(static_cast<double>(a) / count);
  });
}

Tensor Tensor::prod(const Shape& dims, bool keepdim) const {
  const auto p = detail::planReduction("prod", *this, dims, keepdim);
  return foldInto<SumAccOf>("prod", p, sumDtype(dtype()), kProdOp, kIdentity);
}

Tensor Tensor::norm(double pNorm, const Shape& dims, bool keepdim) const {
  checkFloatingInput("norm", dtype());
  if (std::isinf(pNorm)) {
    const Tensor a = abs();
    return pNorm > 0 ? a.amax(dims, keepdim) : a.amin(dims, keepdim);
  }
  const auto p = detail::planReduction("norm", abs(), dims, keepdim);
  if (pNorm == 0.0) {
    return foldInto<SumAccOf>("norm", p, dtype(), [](auto zero) {
      using A = decltype(zero);
      return std::make_pair(A{0}, [](A a, A b) { return static_cast<A>(a + (b != 0 ? 1 : 0)); });
    }, kIdentity, {0.0});
  }
  return foldInto<SumAccOf>(
      "norm", p, dtype(),
      [pNorm](auto zero) {
        using A = decltype(zero);
        return std::make_pair(A{0}, [pNorm](A a, A b) {
          if (pNorm == 2.0) return static_cast<A>(a + b * b);
          if (pNorm == 1.0) return static_cast<A>(a + b);
          return static_cast<A>(a + std::pow(b, static_cast<A>(pNorm)));
        });
      },
      [pNorm](auto a) {
        using A = decltype(a);
        if (pNorm == 2.0) return static_cast<A>(std::sqrt(a));
        if (pNorm == 1.0) return a;
        return static_cast<A>(std::pow(a, static_cast<A>(1.0 / pNorm)));
      },
      {pNorm});
}

Tensor Tensor::var(const Shape& dims, bool unbiased, bool keepdim) const {
  checkFloatingInput("var", dtype());
  const auto p = detail::planReduction("var", *this, dims, keepdim);
  const Tensor centered = sub(mean(dims, true));
  Tensor total = centered.mul(centered).sum(dims, keepdim);
  const int64_t denom = p.reduce - (unbiased ? 1 : 0);
  // PyTorch returns nan (inf for 0/0 handled as nan) when there are too few elements.
  return total.div(static_cast<double>(denom));
}

}  // namespace distlab
