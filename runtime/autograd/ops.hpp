#pragma once
// Differentiable operations (PyTorch: the autograd-recording torch.* functions).
//
// Each op computes its result with the raw kernels of runtime/tensor and, when
// grad mode is on and an input requires grad, records a node whose backward
// gives PyTorch's gradients (broadcast inputs get their gradient summed back to
// their own shape and converted to their own dtype). Outputs never alias an
// input handle: views share storage, but each output has its own autograd slot.
// Arguments are checked by the kernels, which throw naming the op and values.
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/tensor/generator.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::ops {

// ---- elementwise (broadcasting, type promotion) ------------------------------
Tensor add(const Tensor& a, const Tensor& b, Scalar alpha = 1);  // a + alpha * b
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha = 1);  // a - alpha * b
Tensor sub(const Tensor& a, Scalar b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, Scalar b);
Tensor neg(const Tensor& a);
Tensor pow(const Tensor& a, Scalar exponent);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor gelu(const Tensor& a);  // exact (erf) form, PyTorch's default
// out = a with `value` where mask (bool, broadcastable to a) is true.
Tensor maskedFill(const Tensor& a, const Tensor& mask, Scalar value);
// Zeroes each element with probability p (mask drawn from `gen`) and scales the
// rest by 1/(1-p); identity when !training or p == 0. ValueError unless 0<=p<=1.
Tensor dropout(const Tensor& a, double p, bool training, Generator& gen);

// ---- linear algebra ------------------------------------------------------------
Tensor matmul(const Tensor& a, const Tensor& b);  // torch.matmul rules, batched + broadcast
// y = x W^T + b; x (..., in), weight (out, in), bias (out) or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// ---- reductions ----------------------------------------------------------------
Tensor sum(const Tensor& a, const Shape& dims = {}, bool keepdim = false);  // {} = all
Tensor mean(const Tensor& a, const Shape& dims = {}, bool keepdim = false);

// ---- shape ---------------------------------------------------------------------
Tensor reshape(const Tensor& a, const Shape& shape);
Tensor view(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& a, const Shape& dims);
Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& a, int64_t dim, int64_t index);
Tensor unsqueeze(const Tensor& a, int64_t dim);
Tensor squeeze(const Tensor& a, int64_t dim);
Tensor flatten(const Tensor& a, int64_t startDim = 0, int64_t endDim = -1);
Tensor expand(const Tensor& a, const Shape& shape);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& a, int64_t splitSize, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim = 0);

// ---- neural-network functions ----------------------------------------------------
Tensor softmax(const Tensor& a, int64_t dim);
Tensor logSoftmax(const Tensor& a, int64_t dim);
// weight (num, dim) rows picked by int64 `indices` of any shape -> indices.shape + [dim].
Tensor embedding(const Tensor& weight, const Tensor& indices);
// Normalizes over the trailing dims given by normalizedShape (biased variance);
// weight/bias (normalizedShape) may be undefined.
Tensor layerNorm(const Tensor& x,
                 const Shape& normalizedShape,
                 const Tensor& weight = {},
                 const Tensor& bias = {},
                 double eps = 1e-5);
// x (N, C) or (N, C, L). Training: batch statistics, and the running stats (when
// defined) are updated in place: running = (1 - momentum) * running + momentum *
// stat, with the unbiased variance. Eval: normalizes with the running stats.
Tensor batchNorm(const Tensor& x,
                 const Tensor& runningMean,
                 const Tensor& runningVar,
                 const Tensor& weight,
                 const Tensor& bias,
                 bool training,
                 double momentum = 0.1,
                 double eps = 1e-5);
// Mean squared error, mean reduction.
Tensor mseLoss(const Tensor& input, const Tensor& target);
// Cross entropy from logits (N, C) and int64 class targets (N), mean over the
// targets != ignoreIndex (PyTorch: F.cross_entropy, reduction="mean"; all
// targets ignored gives nan, as in PyTorch). ValueError on a target outside
// [0, C) that is not ignoreIndex.
inline constexpr int64_t kDefaultIgnoreIndex = -100;
Tensor crossEntropy(const Tensor& logits,
                    const Tensor& targets,
                    int64_t ignoreIndex = kDefaultIgnoreIndex);

}  // namespace distlab::ops
