#pragma once
// TensorMetaList: the shapes and dtypes of an operation's input (or output)
// tensors, as WorkInfo records them for error messages, the flight recorder,
// tracing and the DETAIL checks.
//
// Note [Tensor metadata without allocation]
// Every collective records this, so it is built and dropped once per
// operation; as vectors of vectors it cost six allocations per single-tensor
// collective, the largest fixed cost of a small allreduce. The dims of all
// tensors are stored flat, with where each tensor's dims end, in InlineVectors sized
// for the common case (up to 2 tensors and 8 dims in all): such an operation
// allocates nothing here. Longer lists (allgather's per-rank outputs) spill to
// the heap and behave the same.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

#include "runtime/core/inline_vector.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::comm {

class TensorMetaList {
 public:
  TensorMetaList() = default;
  // One entry per shape/dtype pair (tests and hand-built WorkInfo).
  TensorMetaList(std::initializer_list<std::pair<Shape, DType>> entries);

  void push(std::span<const int64_t> shape, DType dtype);
  void push(const Tensor& tensor) { push(tensor.sizes(), tensor.dtype()); }

  size_t size() const { return dtypes_.size(); }
  bool empty() const { return dtypes_.empty(); }
  // Tensor i's shape and dtype; i < size().
  std::span<const int64_t> shape(size_t i) const;
  DType dtype(size_t i) const { return dtypes_[i]; }
  int64_t numel(size_t i) const;  // product of shape(i); 1 for a scalar

  // As vectors (the flight recorder's dump, tests).
  std::vector<Shape> shapes() const;
  std::vector<DType> dtypes() const;

 private:
  InlineVector<int64_t, 8> dims_;     // every tensor's dims, one after another
  InlineVector<uint32_t, 2> ends_;    // tensor i's dims end at ends_[i]
  InlineVector<DType, 2> dtypes_;
};

}  // namespace distlab::comm
