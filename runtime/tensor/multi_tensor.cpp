// cat, stack, chunk and split.
#include <numeric>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {

using detail::concat;

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw ValueError("cat: expected a non-empty list of tensors");
  const Tensor& first = tensors.front();
  detail::checkDefined("cat", first);
  if (first.dim() == 0) throw ValueError("cat: zero-dimensional tensor (at position 0) cannot be concatenated");
  dim = detail::wrapDim("cat", dim, first.dim());
  DType dtype = first.dtype();
  Shape outShape = first.sizes();
  outShape[dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    detail::checkDefined("cat", t);
    detail::checkSameDevice("cat", first, t);
    if (t.dim() != first.dim()) {
      throw ValueError(concat("cat: tensors must have the same number of dimensions: got ",
                              first.dim(), " and ", t.dim(), " (tensor number ", i, ")"));
    }
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d != dim && t.sizes()[d] != first.sizes()[d]) {
        throw ValueError(concat("cat: sizes of tensors must match except in dimension ", dim,
                                ". Expected size ", first.sizes()[d], " but got size ",
                                t.sizes()[d], " for tensor number ", i, " in the list"));
      }
    }
    dtype = promoteTypes(dtype, t.dtype());
    outShape[dim] += t.sizes()[dim];
  }
  Tensor out = detail::makeEmpty(outShape, dtype, first.device());
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    out.narrow(dim, offset, t.sizes()[dim]).copy_(t);
    offset += t.sizes()[dim];
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw ValueError("stack: expected a non-empty list of tensors");
  dim = detail::wrapDim("stack", dim, tensors.front().dim() + 1);
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].sizes() != tensors.front().sizes()) {
      throw ValueError(concat("stack: expects each tensor to be equal size, but got ",
                              shapeToString(tensors.front().sizes()), " at entry 0 and ",
                              shapeToString(tensors[i].sizes()), " at entry ", i));
    }
    expanded.push_back(tensors[i].unsqueeze(dim));
  }
  return cat(expanded, dim);
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  if (chunks <= 0) throw ValueError(concat("chunk: chunks must be positive, got ", chunks));
  dim = detail::wrapDim("chunk", dim, this->dim());
  const int64_t size = sizes()[dim];
  const int64_t splitSize = (size + chunks - 1) / chunks;
  if (splitSize == 0) return std::vector<Tensor>(static_cast<size_t>(chunks), *this);
  return split(splitSize, dim);
}

std::vector<Tensor> Tensor::split(int64_t splitSize, int64_t dim) const {
  if (this->dim() == 0) throw ValueError("split: cannot split a 0-dim tensor");
  dim = detail::wrapDim("split", dim, this->dim());
  const int64_t size = sizes()[dim];
  if (splitSize < 0 || (splitSize == 0 && size != 0)) {
    throw ValueError(concat("split: split_size can only be 0 if dimension size is 0, but got ",
                            "split_size=", splitSize, " for dimension ", dim, " of size ", size));
  }
  std::vector<Tensor> parts;
  if (size == 0) return {*this};
  for (int64_t start = 0; start < size; start += splitSize) {
    parts.push_back(narrow(dim, start, std::min(splitSize, size - start)));
  }
  return parts;
}

std::vector<Tensor> Tensor::split(const Shape& splitSizes, int64_t dim) const {
  if (this->dim() == 0) throw ValueError("split: cannot split a 0-dim tensor");
  dim = detail::wrapDim("split", dim, this->dim());
  const int64_t size = sizes()[dim];
  const int64_t total = std::accumulate(splitSizes.begin(), splitSizes.end(), int64_t{0});
  bool negative = false;
  for (int64_t s : splitSizes) negative = negative || s < 0;
  if (total != size || negative) {
    throw ValueError(concat("split: split_sizes ", shapeToString(splitSizes),
                            " must be non-negative and sum exactly to ", size,
                            " (the input's size at dimension ", dim, ")"));
  }
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t s : splitSizes) {
    parts.push_back(narrow(dim, start, s));
    start += s;
  }
  return parts;
}

}  // namespace distlab
