// Raw kernels used by the differentiable ops where the tensor layer has no
// equivalent (gelu derivative, fused relu mask, cross-entropy loops).
#include <cmath>

#include "runtime/autograd/detail/op_util.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/tensor/dispatch.hpp"

namespace distlab::ops::detail {
namespace {

// Runs fn<T>(...) for float/double; other floating dtypes compute in float32.
template <typename Fn>
Tensor floatDispatch(const Tensor& like, Fn&& fn) {
  if (like.dtype() == DType::kFloat64) return fn(double{});
  return fn(float{});
}

DType computeType(DType d) { return d == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32; }

}  // namespace

Tensor sumToSize(const Tensor& grad, const Shape& shape, DType dtype) {
  Tensor g = grad;
  if (g.sizes() != shape) {
    const int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
    Shape dims;
    for (int64_t i = 0; i < g.dim(); ++i) {
      if (i < lead || (shape[i - lead] == 1 && g.size(i) != 1)) dims.push_back(i);
    }
    if (!dims.empty()) g = g.sum(dims, /*keepdim=*/true);
    g = g.reshape(shape);
  }
  return g.dtype() == dtype ? g : g.to(dtype);
}

Tensor reluBackward(const Tensor& grad, const Tensor& output) {
  if (!output.device().isCpu()) {  // composed from tensor kernels on other devices
    return grad.mul(output.gt(0).to(grad.dtype())).to(output.dtype());
  }
  const DType ct = computeType(output.dtype());
  Tensor g = grad.to(ct).contiguous();
  Tensor o = output.to(ct).contiguous();
  Tensor result = floatDispatch(o, [&](auto tag) {
    using T = decltype(tag);
    Tensor r = empty(o.sizes(), plain(ct, Device::cpu()));
    const T* gp = g.data<T>();
    const T* op = o.data<T>();
    T* rp = r.data<T>();
    const int64_t n = o.numel();
    for (int64_t i = 0; i < n; ++i) rp[i] = op[i] > T(0) ? gp[i] : T(0);
    return r;
  });
  return result.to(output.dtype());
}

Tensor geluBackward(const Tensor& grad, const Tensor& input) {
  if (!input.device().isCpu()) {
    // Device kernel "gelu_backward": {r} = {grad, input}, dtype of input.
    Tensor r = empty(input.sizes(), plain(input));
    runKernel(input.device(), "gelu_backward", {r}, {grad.to(input.device()), input});
    return r;
  }
  const DType ct = computeType(input.dtype());
  Tensor g = grad.to(ct).contiguous();
  Tensor x = input.to(ct).contiguous();
  Tensor result = floatDispatch(x, [&](auto tag) {
    using T = decltype(tag);
    Tensor r = empty(x.sizes(), plain(ct, Device::cpu()));
    const T* gp = g.data<T>();
    const T* xp = x.data<T>();
    T* rp = r.data<T>();
    const double kInvSqrt2 = 0.70710678118654752440;
    const double kInvSqrt2Pi = 0.39894228040143267794;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = xp[i];
      const double cdf = 0.5 * (1.0 + std::erf(v * kInvSqrt2));
      const double pdf = kInvSqrt2Pi * std::exp(-0.5 * v * v);
      rp[i] = static_cast<T>(gp[i] * (cdf + v * pdf));
    }
    return r;
  });
  return result.to(input.dtype());
}

double nllSum(const Tensor& logProbs,
              const Tensor& targets,
              int64_t ignoreIndex,
              int64_t* validCount) {
  Tensor lp = logProbs.to(computeType(logProbs.dtype())).contiguous();
  Tensor t = targets.contiguous();
  const int64_t n = lp.size(0);
  const int64_t c = lp.size(1);
  const int64_t* tp = t.data<int64_t>();
  double total = 0.0;
  int64_t valid = 0;
  floatDispatch(lp, [&](auto tag) {
    using T = decltype(tag);
    const T* p = lp.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if (tp[i] == ignoreIndex) continue;
      DL_CHECK_T(ValueError, tp[i] >= 0 && tp[i] < c, "crossEntropy: target ", tp[i],
                 " at position ", i, " is out of bounds for ", c, " classes");
      total -= static_cast<double>(p[i * c + tp[i]]);
      ++valid;
    }
    return Tensor();
  });
  *validCount = valid;
  return total;
}

Tensor crossEntropyBackward(const Tensor& logProbs,
                            const Tensor& targets,
                            int64_t ignoreIndex,
                            double scale) {
  const DType ct = computeType(logProbs.dtype());
  Tensor lp = logProbs.to(ct).contiguous();
  Tensor t = targets.contiguous();
  const int64_t n = lp.size(0);
  const int64_t c = lp.size(1);
  const int64_t* tp = t.data<int64_t>();
  Tensor result = floatDispatch(lp, [&](auto tag) {
    using T = decltype(tag);
    Tensor r = empty({n, c}, plain(ct, Device::cpu()));
    const T* p = lp.data<T>();
    T* rp = r.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      T* row = rp + i * c;
      if (tp[i] == ignoreIndex) {
        for (int64_t j = 0; j < c; ++j) row[j] = T(0);
        continue;
      }
      for (int64_t j = 0; j < c; ++j) row[j] = static_cast<T>(std::exp(p[i * c + j]) * scale);
      row[tp[i]] -= static_cast<T>(scale);
    }
    return r;
  });
  return result.to(logProbs.dtype());
}

}  // namespace distlab::ops::detail
