// max/min/amax/amin/argmax/argmin (Note [Reduction layout]). NaN wins, as in
// PyTorch; ties report the first index.
#include <vector>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/convert.hpp"
#include "runtime/tensor/detail/reduce_plan.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

// True when `v` should replace the current best `best`.
template <bool kMax, typename M>
inline bool better(M v, M best) {
  if constexpr (std::is_floating_point_v<M>) {
    if (best != best) return false;
    if (v != v) return true;
  }
  return kMax ? v > best : v < best;
}

// Values (and, when `indices` is defined, int64 indices) of the extreme along
// the plan's reduce axis.
template <bool kMax>
void extreme(const char* op, const detail::ReducePlan& p, Tensor& values, Tensor* indices) {
  if (p.reduce == 0) {
    throw ValueError(detail::concat(op, ": cannot reduce over an empty dimension (input of ",
                                    p.input.numel(), " elements); specify a non-empty dim"));
  }
  const Device device = p.input.device();
  values = detail::makeEmpty(p.outShape, p.input.dtype(), device);
  if (indices != nullptr) *indices = detail::makeEmpty(p.outShape, DType::kInt64, device);
  if (!device.isCpu()) {
    // Device kernel `op`: outputs {values} or {values, indices}; ints {outer, reduce, inner}.
    const std::initializer_list<int64_t> layout = {p.outer, p.reduce, p.inner};
    if (indices != nullptr) {
      runKernel(device, op, {values, *indices}, {p.input}, {}, layout);
    } else {
      runKernel(device, op, {values}, {p.input}, {}, layout);
    }
    return;
  }
  dispatchDType(p.input.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using M = detail::OpMathT<T>;
    const T* x = static_cast<const T*>(p.input.rawData());
    T* outV = static_cast<T*>(values.rawData());
    int64_t* outI = indices != nullptr ? indices->template data<int64_t>() : nullptr;
    for (int64_t o = 0; o < p.outer; ++o) {
      for (int64_t i = 0; i < p.inner; ++i) {
        const T* base = x + o * p.reduce * p.inner + i;
        M best = static_cast<M>(base[0]);
        int64_t bestIndex = 0;
        for (int64_t r = 1; r < p.reduce; ++r) {
          const M v = static_cast<M>(base[r * p.inner]);
          if (better<kMax>(v, best)) {
            best = v;
            bestIndex = r;
          }
        }
        outV[o * p.inner + i] = detail::castTo<T>(best);
        if (outI != nullptr) outI[o * p.inner + i] = bestIndex;
      }
    }
  });
}

template <bool kMax>
Tensor extremeValues(const char* op, const Tensor& t, const Shape& dims, bool keepdim) {
  const auto p = detail::planReduction(op, t, dims, keepdim);
  Tensor values;
  extreme<kMax>(op, p, values, nullptr);
  return values;
}

template <bool kMax>
std::pair<Tensor, Tensor> extremeAlong(const char* op, const Tensor& t, int64_t dim,
                                       bool keepdim) {
  const auto p = detail::planReduction(op, t, {dim}, keepdim);
  Tensor values;
  Tensor indices;
  extreme<kMax>(op, p, values, &indices);
  return {values, indices};
}

}  // namespace

Tensor Tensor::max() const { return extremeValues<true>("max", *this, {}, false); }
Tensor Tensor::min() const { return extremeValues<false>("min", *this, {}, false); }
Tensor Tensor::amax(const Shape& dims, bool keepdim) const {
  return extremeValues<true>("amax", *this, dims, keepdim);
}
Tensor Tensor::amin(const Shape& dims, bool keepdim) const {
  return extremeValues<false>("amin", *this, dims, keepdim);
}
std::pair<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return extremeAlong<true>("max", *this, dim, keepdim);
}
std::pair<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return extremeAlong<false>("min", *this, dim, keepdim);
}
Tensor Tensor::argmax(int64_t dim, bool keepdim) const {
  return extremeAlong<true>("argmax", *this, dim, keepdim).second;
}
Tensor Tensor::argmin(int64_t dim, bool keepdim) const {
  return extremeAlong<false>("argmin", *this, dim, keepdim).second;
}

}  // namespace distlab
