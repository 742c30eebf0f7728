// softmax / logSoftmax along one dim, numerically stable (the row max is
// subtracted before exp), computed in float for float32 and the half types and
// in double for float64.
#include <cmath>
#include <vector>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/convert.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

// One softmax "line": n values at stride `step`.
template <typename T, bool kLog>
void softmaxLine(const T* x, T* y, int64_t n, int64_t step, std::vector<detail::OpMathT<T>>& buf) {
  using M = detail::OpMathT<T>;
  M maxValue = -INFINITY;
  for (int64_t k = 0; k < n; ++k) {
    const M v = static_cast<M>(x[k * step]);
    buf[k] = v;
    if (v > maxValue || v != v) maxValue = v;
  }
  if (std::isinf(maxValue) && maxValue < 0) maxValue = 0;  // all -inf: avoid inf - inf
  M total = 0;
  for (int64_t k = 0; k < n; ++k) {
    buf[k] -= maxValue;
    total += std::exp(buf[k]);
  }
  if constexpr (kLog) {
    const M logTotal = std::log(total);
    for (int64_t k = 0; k < n; ++k) y[k * step] = detail::castTo<T>(buf[k] - logTotal);
  } else {
    const M inv = M{1} / total;
    for (int64_t k = 0; k < n; ++k) y[k * step] = detail::castTo<T>(std::exp(buf[k]) * inv);
  }
}

template <bool kLog>
Tensor softmaxImpl(const char* op, const Tensor& self, int64_t dim) {
  detail::checkDefined(op, self);
  if (!isFloatingPoint(self.dtype())) {
    throw ValueError(detail::concat(op, ": expects a floating point tensor, got dtype ",
                                    dtypeName(self.dtype())));
  }
  dim = detail::wrapDim(op, dim, self.dim());
  const Tensor x = self.contiguous();
  Tensor out = detail::makeEmpty(self.sizes(), self.dtype(), self.device());
  if (x.numel() == 0) return out;
  const int64_t n = x.dim() == 0 ? 1 : x.sizes()[dim];
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.sizes()[d];
  const int64_t outer = x.numel() / (n * inner);
  if (!out.device().isCpu()) {
    runKernel(out.device(), op, {out}, {x}, {}, {outer, n, inner});
    return out;
  }
  dispatchDType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || detail::kIsHalfLike<T>) {
      std::vector<detail::OpMathT<T>> buf(static_cast<size_t>(n));
      const T* px = static_cast<const T*>(x.rawData());
      T* py = static_cast<T*>(out.rawData());
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t base = o * n * inner + i;
          softmaxLine<T, kLog>(px + base, py + base, n, inner, buf);
        }
      }
    }
  });
  return out;
}

}  // namespace

Tensor Tensor::softmax(int64_t dim) const { return softmaxImpl<false>("softmax", *this, dim); }
Tensor Tensor::logSoftmax(int64_t dim) const {
  return softmaxImpl<true>("logSoftmax", *this, dim);
}

}  // namespace distlab
