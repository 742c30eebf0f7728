// Differentiable neural-network functions: softmax, embedding, norms, losses.
#include <cmath>
#include <limits>

#include "runtime/autograd/detail/op_util.hpp"
#include "runtime/autograd/grad_mode.hpp"
#include "runtime/autograd/node.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::ops {

using autograd::recordFunction;
using autograd::TensorList;

Tensor softmax(const Tensor& a, int64_t dim) {
  Tensor out = a.softmax(dim);
  return recordFunction("SoftmaxBackward", {a}, out,
                        [o = out.detach(), dim](const TensorList& g, const std::vector<bool>&) {
                          Tensor dot = g[0].mul(o).sum({dim}, true);
                          return TensorList{o.mul(g[0].sub(dot))};
                        });
}

Tensor logSoftmax(const Tensor& a, int64_t dim) {
  Tensor out = a.logSoftmax(dim);
  return recordFunction("LogSoftmaxBackward", {a}, out,
                        [o = out.detach(), dim](const TensorList& g, const std::vector<bool>&) {
                          Tensor total = g[0].sum({dim}, true);
                          return TensorList{g[0].sub(o.exp().mul(total))};
                        });
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  DL_CHECK_T(ValueError, weight.dim() == 2, "embedding: weight must be 2-D, got shape ",
             shapeToString(weight.sizes()));
  DL_CHECK_T(ValueError, indices.dtype() == DType::kInt64 || indices.dtype() == DType::kInt32,
             "embedding: indices must be int64 or int32, got ", dtypeName(indices.dtype()));
  Tensor flat = indices.reshape({-1}).to(DType::kInt64);
  Shape outShape = indices.sizes();
  outShape.push_back(weight.size(1));
  Tensor out = weight.indexSelect(0, flat).view(outShape);
  return recordFunction("EmbeddingBackward", {weight}, out,
                        [flat, sizes = weight.sizes(), dt = weight.dtype()](
                            const TensorList& g, const std::vector<bool>&) {
                          Tensor r = zeros(sizes, detail::plain(dt, g[0].device()));
                          r.indexAdd_(0, flat, g[0].reshape({-1, sizes[1]}));
                          return TensorList{r};
                        });
}

Tensor layerNorm(const Tensor& x,
                 const Shape& normalizedShape,
                 const Tensor& weight,
                 const Tensor& bias,
                 double eps) {
  const auto k = static_cast<int64_t>(normalizedShape.size());
  DL_CHECK_T(ValueError, k >= 1 && k <= x.dim(), "layerNorm: normalized_shape ",
             shapeToString(normalizedShape), " does not fit input of shape ",
             shapeToString(x.sizes()));
  Shape dims;
  for (int64_t i = x.dim() - k; i < x.dim(); ++i) {
    DL_CHECK_T(ValueError, x.size(i) == normalizedShape[static_cast<size_t>(i - x.dim() + k)],
               "layerNorm: normalized_shape ", shapeToString(normalizedShape),
               " does not match the trailing dims of input shape ", shapeToString(x.sizes()));
    dims.push_back(i);
  }
  Tensor centered = sub(x, mean(x, dims, true));
  Tensor var = mean(mul(centered, centered), dims, true);
  Tensor y = mul(centered, pow(add(var, Scalar(eps)), Scalar(-0.5)));
  if (weight.defined()) y = mul(y, weight);
  if (bias.defined()) y = add(y, bias);
  return y;
}

Tensor batchNorm(const Tensor& x,
                 const Tensor& runningMean,
                 const Tensor& runningVar,
                 const Tensor& weight,
                 const Tensor& bias,
                 bool training,
                 double momentum,
                 double eps) {
  DL_CHECK_T(ValueError, x.dim() == 2 || x.dim() == 3,
             "batchNorm: expected 2-D or 3-D input (N, C[, L]), got shape ",
             shapeToString(x.sizes()));
  const int64_t channels = x.size(1);
  const Shape statShape = x.dim() == 2 ? Shape{1, channels} : Shape{1, channels, 1};
  const Shape dims = x.dim() == 2 ? Shape{0} : Shape{0, 2};
  Tensor y;
  if (training) {
    const int64_t count = x.numel() / channels;
    DL_CHECK_T(ValueError, count > 1,
               "Expected more than 1 value per channel when training, got input size ",
               shapeToString(x.sizes()));
    Tensor mu = mean(x, dims, true);
    Tensor centered = sub(x, mu);
    Tensor var = mean(mul(centered, centered), dims, true);
    y = mul(centered, pow(add(var, Scalar(eps)), Scalar(-0.5)));
    if (runningMean.defined() && runningVar.defined()) {
      autograd::NoGradGuard noGrad;
      Tensor unbiased = var.detach()
                            .reshape({channels})
                            .mul(static_cast<double>(count) / static_cast<double>(count - 1));
      Tensor rm = runningMean;  // handles share the buffers: updates land in place
      Tensor rv = runningVar;
      rm.mul_(1.0 - momentum).add_(mu.detach().reshape({channels}), momentum);
      rv.mul_(1.0 - momentum).add_(unbiased, momentum);
    }
  } else {
    DL_CHECK_T(ValueError, runningMean.defined() && runningVar.defined(),
               "batchNorm: eval mode needs running_mean and running_var");
    Tensor rstd = runningVar.add(eps).rsqrt().reshape(statShape);
    y = mul(sub(x, runningMean.reshape(statShape)), rstd);
  }
  if (weight.defined()) y = mul(y, reshape(weight, statShape));
  if (bias.defined()) y = add(y, reshape(bias, statShape));
  return y;
}

Tensor mseLoss(const Tensor& input, const Tensor& target) {
  DL_CHECK_T(ValueError, input.sizes() == target.sizes(), "mseLoss: input shape ",
             shapeToString(input.sizes()), " and target shape ", shapeToString(target.sizes()),
             " differ");
  Tensor d = sub(input, target);
  return mean(mul(d, d));
}

namespace detail {

Tensor crossEntropyComposed(const Tensor& logits, const Tensor& targets, int64_t ignoreIndex) {
  const Device device = logits.device();
  const Tensor t = targets.to(device);
  const Tensor valid = t.ne(ignoreIndex);
  const Tensor safe = t.maskedFill(valid.eq(false), 0).unsqueeze(1);
  // One-hot rows by comparison with the class ids (elementwise kernels only).
  const Tensor classes = arange(logits.size(1), TensorOptions{DType::kInt64, device});
  Tensor pick = classes.unsqueeze(0).eq(safe).to(logits.dtype());
  pick.mul_(valid.to(logits.dtype()).unsqueeze(1));
  const Tensor total = sum(mul(logSoftmax(logits, 1), pick));
  return div(neg(total), valid.sum().to(logits.dtype()));
}

}  // namespace detail

Tensor crossEntropy(const Tensor& logits, const Tensor& targets, int64_t ignoreIndex) {
  DL_CHECK_T(ValueError, logits.dim() == 2, "crossEntropy: logits must be (N, C), got shape ",
             shapeToString(logits.sizes()));
  DL_CHECK_T(ValueError, targets.dim() == 1 && targets.size(0) == logits.size(0),
             "crossEntropy: targets must be (N) with N = ", logits.size(0), ", got shape ",
             shapeToString(targets.sizes()));
  DL_CHECK_T(ValueError, targets.dtype() == DType::kInt64,
             "crossEntropy: targets must be int64 class indices, got ", dtypeName(targets.dtype()));
  if (!logits.device().isCpu()) return detail::crossEntropyComposed(logits, targets, ignoreIndex);
  Tensor logProbs = logits.logSoftmax(1);
  int64_t valid = 0;
  const double total = detail::nllSum(logProbs, targets, ignoreIndex, &valid);
  const double loss =
      valid == 0 ? std::numeric_limits<double>::quiet_NaN() : total / static_cast<double>(valid);
  Tensor out = scalarTensor(loss, detail::plain(logits.dtype(), Device::cpu()));
  return recordFunction(
      "NllLossBackward", {logits}, out,
      [lp = logProbs, t = targets.detach(), ignoreIndex, valid](const TensorList& g,
                                                                const std::vector<bool>&) {
        const double scale = g[0].item<double>() / static_cast<double>(valid);
        return TensorList{detail::crossEntropyBackward(lp, t, ignoreIndex, scale)};
      });
}

}  // namespace distlab::ops
