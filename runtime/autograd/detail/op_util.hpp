#pragma once
// Helpers shared by the differentiable ops (internal).
#include "runtime/tensor/tensor.hpp"

namespace distlab::ops::detail {

// Options for a plain (non-grad) tensor like `t`.
inline TensorOptions plain(const Tensor& t) { return TensorOptions{t.dtype(), t.device(), false}; }
inline TensorOptions plain(DType dtype, Device device) { return TensorOptions{dtype, device, false}; }

// Sums a broadcast gradient back to `shape` and converts it to `dtype`
// (the backward of broadcasting).
Tensor sumToSize(const Tensor& grad, const Shape& shape, DType dtype);
inline Tensor reduceLike(const Tensor& grad, const Tensor& like) {
  return sumToSize(grad, like.sizes(), like.dtype());
}

// Raw kernels with no tensor-layer equivalent (float32/float64, other floating
// dtypes through float32). Inputs may be strided; results are contiguous.
Tensor reluBackward(const Tensor& grad, const Tensor& output);
Tensor geluBackward(const Tensor& grad, const Tensor& input);
// Per-row -logSoftmax[target] summed over valid rows, and the valid-row count.
double nllSum(const Tensor& logProbs,
              const Tensor& targets,
              int64_t ignoreIndex,
              int64_t* validCount);
// Cross-entropy from differentiable ops, for devices other than the CPU (the
// CPU path reads the targets on the host): the mean over valid rows of
// -logSoftmax(logits)[row, target], ignored rows masked out. Nothing is read
// back to the host, so it also runs shape-only on meta. Runs on CPU too.
Tensor crossEntropyComposed(const Tensor& logits, const Tensor& targets, int64_t ignoreIndex);
// (softmax - onehot(target)) * scale for valid rows, 0 for ignored rows.
Tensor crossEntropyBackward(const Tensor& logProbs,
                            const Tensor& targets,
                            int64_t ignoreIndex,
                            double scale);

}  // namespace distlab::ops::detail
