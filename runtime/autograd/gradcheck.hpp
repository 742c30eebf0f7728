#pragma once
// Numerical gradient check (PyTorch: torch.autograd.gradcheck).
//
// Compares the analytic gradients of a random projection of fn's outputs,
// L = sum_k <v_k, out_k> (v_k drawn from a fixed seed), with central
// differences (L(x + eps) - L(x - eps)) / (2 eps), element by element, for
// every input that requires grad. Use float64 inputs: float32 central
// differences are too noisy for the default tolerances.
// An element passes when |analytic - numeric| <= atol + rtol * |numeric|.
// The inputs are not modified (fn sees perturbed copies).
#include <functional>
#include <vector>

#include "runtime/autograd/node.hpp"

namespace distlab::autograd {

using GradcheckFn = std::function<TensorList(const TensorList&)>;

// Returns true when every element passes; otherwise throws Error naming the
// input, the element index and both values (raiseException) or returns false.
bool gradcheck(const GradcheckFn& fn,
               const TensorList& inputs,
               double eps = 1e-6,
               double atol = 1e-5,
               double rtol = 1e-3,
               bool raiseException = true);
// Single-output form.
bool gradcheck(const std::function<Tensor(const TensorList&)>& fn,
               const TensorList& inputs,
               double eps = 1e-6,
               double atol = 1e-5,
               double rtol = 1e-3,
               bool raiseException = true);

}  // namespace distlab::autograd
