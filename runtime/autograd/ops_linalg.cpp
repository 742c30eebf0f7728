// Differentiable matmul, linear and reductions.
#include "runtime/autograd/detail/op_util.hpp"
#include "runtime/autograd/node.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::ops {

using autograd::recordFunction;
using autograd::TensorList;
using detail::reduceLike;

Tensor matmul(const Tensor& a, const Tensor& b) {
  DL_CHECK_T(ValueError, a.dim() >= 1 && b.dim() >= 1,
             "matmul: both arguments need at least 1 dimension, got ", a.dim(), "-D and ", b.dim(),
             "-D");
  // 1-D operands: promote to matrices (as torch.matmul does) and drop the dim again.
  if (a.dim() == 1) return squeeze(matmul(unsqueeze(a, 0), b), -2);
  if (b.dim() == 1) return squeeze(matmul(a, unsqueeze(b, -1)), -1);
  return recordFunction(
      "MmBackward", {a, b}, a.matmul(b),
      [a = a.detach(), b = b.detach()](const TensorList& g, const std::vector<bool>& needs) {
        TensorList r(2);
        if (needs[0]) r[0] = reduceLike(g[0].matmul(b.transpose(-1, -2)), a);
        if (needs[1]) r[1] = reduceLike(a.transpose(-1, -2).matmul(g[0]), b);
        return r;
      });
}

namespace {

// Note [Linear as W x^T]
// y = x W^T is computed as (W x^T)^T: OpenBLAS runs the product with the big
// weight untransposed markedly faster than x * W^T (1024x1024 weight, batch 32:
// 0.75 vs 1.28 ms on one thread); the copy back to a contiguous (batch, out)
// result is tiny. Backward uses transposed views only (no copies):
// dx = g W, dW = g^T x, db = sum_rows(g).
// Note [Linear's graph]
// The graph has PyTorch's shape, linear = addmm(bias, x, weight.t()): the
// weight reaches AddmmBackward through its own TransposeBackward node, and the
// node's edges are (bias, x, weight^T). With AccumulateGrad running first
// among ready nodes (Note [Engine order]), a Linear's bias gradient is ready
// before its weight's, the order DDP records for its bucket rebuild. The
// weight^T gradient is handed out as the transposed view of a contiguous dW,
// so TransposeBackward gives AccumulateGrad a contiguous gradient to steal.
Tensor linear2d(const Tensor& x, const Tensor& w, const Tensor& b) {
  const Tensor wt = transpose(w, 0, 1);  // recorded before the product, as in PyTorch
  Tensor y = w.mm(x.t()).t().contiguous();
  if (b.defined()) y.add_(b);
  TensorList inputs;
  if (b.defined()) inputs.push_back(b);
  inputs.push_back(x);
  inputs.push_back(wt);
  return recordFunction(b.defined() ? "AddmmBackward" : "MmBackward", inputs, y,
                        [x = x.detach(), w = w.detach(), hasBias = b.defined()](
                            const TensorList& g, const std::vector<bool>& needs) {
                          const size_t k = hasBias ? 1 : 0;
                          TensorList r(k + 2);
                          if (hasBias && needs[0]) r[0] = g[0].sum({0});
                          if (needs[k]) r[k] = g[0].mm(w);
                          if (needs[k + 1]) r[k + 1] = g[0].t().mm(x).t();
                          return r;
                        });
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  DL_CHECK_T(ValueError, weight.dim() == 2, "linear: weight must be 2-D, got shape ",
             shapeToString(weight.sizes()));
  DL_CHECK_T(ValueError, x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input shape ",
             shapeToString(x.sizes()), " does not match weight shape ",
             shapeToString(weight.sizes()), " (last input dim must be ", weight.size(1), ")");
  if (x.dim() == 2) return linear2d(x, weight, bias);
  Shape outShape = x.sizes();
  outShape.back() = weight.size(0);
  Tensor flat = reshape(x, {-1, x.size(-1)});
  return reshape(linear2d(flat, weight, bias), outShape);
}

Tensor sum(const Tensor& a, const Shape& dims, bool keepdim) {
  Shape keptShape = a.sizes();
  if (dims.empty()) {
    for (auto& s : keptShape) s = 1;
  } else {
    for (int64_t d : dims) keptShape[static_cast<size_t>(d < 0 ? d + a.dim() : d)] = 1;
  }
  return recordFunction(
      "SumBackward", {a}, a.sum(dims, keepdim),
      [keptShape, sizes = a.sizes(), dt = a.dtype()](const TensorList& g,
                                                     const std::vector<bool>&) {
        Tensor r = g[0].reshape(keptShape).expand(sizes);
        return TensorList{r.dtype() == dt ? r : r.to(dt)};
      },
      false);
}

Tensor mean(const Tensor& a, const Shape& dims, bool keepdim) {
  int64_t count = 1;
  if (dims.empty()) {
    count = a.numel();
  } else {
    for (int64_t d : dims) count *= a.size(d);
  }
  return div(sum(a, dims, keepdim), Scalar(static_cast<double>(count)));
}

}  // namespace distlab::ops
