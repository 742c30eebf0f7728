#pragma once
// Helpers shared by the tensor .cpp files: argument checks with PyTorch-shaped
// messages, dim wrapping, result allocation and type promotion.
#include <string>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::detail {

void checkDefined(const char* op, const Tensor& t);
// `t` itself on the CPU, a CPU copy of it on a device with memory; throws for
// meta tensors, which have no values (for ops that read values on the host:
// item, toVector, equal, printing).
Tensor hostValues(const char* op, const Tensor& t);
// Wraps a possibly negative dim into [0, ndim); ValueError when out of range.
// A 0-dim tensor accepts dims -1 and 0 (as PyTorch does).
int64_t wrapDim(const char* op, int64_t dim, int64_t ndim);
Shape contiguousStrides(const Shape& sizes);
// A new contiguous tensor sharing nothing.
Tensor makeEmpty(const Shape& sizes, DType dtype, Device device = Device::cpu());
// A view of `t` with other geometry (same storage, no autograd meta).
Tensor makeView(const Tensor& t, Shape sizes, Shape strides, int64_t offset);
// PyTorch result type of a binary op: a 0-dim tensor only wins when it is of a
// higher category (bool < integral < floating) than the other operand.
DType resultType(const Tensor& a, const Tensor& b);
// Result type of tensor op scalar: the scalar only promotes across categories
// (int tensor with float scalar -> float32; bool tensor with int scalar -> int64).
DType resultType(const Tensor& a, const Scalar& s);
// PyTorch's can_cast: no floating -> integral and no non-bool -> bool.
bool canCast(DType from, DType to);
// In-place ops: throws like PyTorch when the op's result type cannot be
// stored in `self` ("result type Float can't be cast to the desired output type Long").
void checkInplaceCast(const char* op, DType result, DType self);
std::string dtypeTitle(DType dtype);  // "Float", "Long", ... as in PyTorch messages
// broadcastShapes with the op name in front of the error message.
Shape broadcastFor(const char* op, const Shape& a, const Shape& b);

}  // namespace distlab::detail
