#include "runtime/autograd/ops_cast.hpp"

#include "runtime/autograd/node.hpp"

namespace distlab::ops {

Tensor toDType(const Tensor& a, DType dtype) {
  if (a.dtype() == dtype) return a;
  const DType from = a.dtype();
  return autograd::recordFunction(
      "ToCopyBackward", {a}, a.to(dtype),
      [from](const autograd::TensorList& g, const std::vector<bool>&) {
        return autograd::TensorList{g[0].defined() ? g[0].to(from) : Tensor()};
      },
      /*savesTensors=*/false);
}

}  // namespace distlab::ops
