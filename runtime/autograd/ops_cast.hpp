#pragma once
// Differentiable dtype conversion (PyTorch: Tensor.to(dtype)): the gradient is
// converted back to the input's dtype. Returns `a` itself when it already has
// `dtype` (no node recorded), like Tensor::to.
#include "runtime/tensor/tensor.hpp"

namespace distlab::ops {

Tensor toDType(const Tensor& a, DType dtype);

}  // namespace distlab::ops
