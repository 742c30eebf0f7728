// View operations: every result shares storage with its input.
#include <algorithm>
#include <optional>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

using detail::concat;
using detail::makeView;
using detail::wrapDim;

// Replaces one -1 in `shape` so the element count is `numel`.
Shape inferShape(const char* op, const Shape& shape, int64_t numel) {
  Shape out = shape;
  int64_t known = 1;
  std::optional<size_t> inferred;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred) throw ValueError(concat(op, ": only one dimension can be inferred"));
      inferred = i;
    } else if (shape[i] < 0) {
      throw ValueError(concat(op, ": invalid shape dimension ", shape[i], " in shape ",
                              shapeToString(shape)));
    } else {
      known *= shape[i];
    }
  }
  const bool ok = inferred ? (known != 0 && numel % known == 0) : known == numel;
  if (!ok) {
    throw ValueError(concat(op, ": shape ", shapeToString(shape),
                            " is invalid for input of size ", numel));
  }
  if (inferred) out[*inferred] = numel / known;
  return out;
}

// The strides that let `newShape` view memory laid out as (oldShape,
// oldStrides), or nullopt when some new dim would span two non-adjacent
// memory chunks. Walks both shapes from the innermost dim, matching chunks
// of memory-contiguous old dims against runs of new dims.
std::optional<Shape> viewStrides(const Shape& oldShape, const Shape& oldStrides,
                                 const Shape& newShape) {
  Shape newStrides(newShape.size());
  if (oldShape.empty() || shapeNumel(oldShape) == 0) return detail::contiguousStrides(newShape);
  int64_t viewD = static_cast<int64_t>(newShape.size()) - 1;
  int64_t chunkBase = oldStrides.back();
  int64_t tensorNumel = 1;
  int64_t viewNumel = 1;
  for (int64_t d = static_cast<int64_t>(oldShape.size()) - 1; d >= 0; --d) {
    tensorNumel *= oldShape[d];
    const bool chunkEnds =
        d == 0 || (oldShape[d - 1] != 1 && oldStrides[d - 1] != tensorNumel * chunkBase);
    if (!chunkEnds) continue;
    while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] == 1)) {
      newStrides[viewD] = viewNumel * chunkBase;
      viewNumel *= newShape[viewD];
      --viewD;
    }
    if (viewNumel != tensorNumel) return std::nullopt;
    if (d > 0) {
      chunkBase = oldStrides[d - 1];
      tensorNumel = 1;
      viewNumel = 1;
    }
  }
  if (viewD != -1) return std::nullopt;
  return newStrides;
}

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  const Shape sizes = inferShape("view", shape, numel());
  auto strides = viewStrides(this->sizes(), this->strides(), sizes);
  if (!strides) {
    throw Error(concat("view: shape ", shapeToString(sizes), " is not compatible with input size ",
                       shapeToString(this->sizes()), " and stride ",
                       shapeToString(this->strides()),
                       " (at least one dimension spans across two contiguous subspaces); use "
                       "reshape() instead"));
  }
  return makeView(*this, sizes, std::move(*strides), storageOffset());
}

Tensor Tensor::reshape(const Shape& shape) const {
  const Shape sizes = inferShape("reshape", shape, numel());
  if (auto strides = viewStrides(this->sizes(), this->strides(), sizes)) {
    return makeView(*this, sizes, std::move(*strides), storageOffset());
  }
  return clone().view(sizes);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = wrapDim("narrow", d, dim());
  DL_CHECK_T(ValueError, dim() > 0, "narrow: cannot be applied to a 0-dim tensor");
  const int64_t size = sizes()[d];
  if (start < 0) start += size;
  if (start < 0 || length < 0 || start + length > size) {
    throw ValueError(concat("narrow: start (", start, ") + length (", length,
                            ") exceeds dimension size (", size, ") of dimension ", d,
                            " (shape ", shapeToString(sizes()), ")"));
  }
  Shape newSizes = sizes();
  newSizes[d] = length;
  return makeView(*this, std::move(newSizes), strides(), storageOffset() + start * strides()[d]);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  DL_CHECK_T(ValueError, dim() > 0, "slice: cannot be applied to a 0-dim tensor");
  d = wrapDim("slice", d, dim());
  if (step <= 0) throw ValueError(concat("slice: step must be positive, got ", step));
  const int64_t size = sizes()[d];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Shape newSizes = sizes();
  Shape newStrides = strides();
  newSizes[d] = (end - start + step - 1) / step;
  newStrides[d] *= step;
  return makeView(*this, std::move(newSizes), std::move(newStrides),
                  storageOffset() + start * strides()[d]);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  if (dim() == 0) throw ValueError("select: cannot be applied to a 0-dim tensor");
  d = wrapDim("select", d, dim());
  const int64_t size = sizes()[d];
  if (index < -size || index >= size) {
    throw ValueError(concat("select: index ", index, " out of range for tensor of size ",
                            shapeToString(sizes()), " at dimension ", d));
  }
  if (index < 0) index += size;
  Shape newSizes = sizes();
  Shape newStrides = strides();
  newSizes.erase(newSizes.begin() + d);
  newStrides.erase(newStrides.begin() + d);
  return makeView(*this, std::move(newSizes), std::move(newStrides),
                  storageOffset() + index * strides()[d]);
}

Tensor Tensor::flatten(int64_t startDim, int64_t endDim) const {
  if (dim() == 0) return reshape({1});
  startDim = wrapDim("flatten", startDim, dim());
  endDim = wrapDim("flatten", endDim, dim());
  if (startDim > endDim) {
    throw ValueError(concat("flatten: start_dim (", startDim, ") cannot come after end_dim (",
                            endDim, ")"));
  }
  Shape newSizes(sizes().begin(), sizes().begin() + startDim);
  int64_t merged = 1;
  for (int64_t i = startDim; i <= endDim; ++i) merged *= sizes()[i];
  newSizes.push_back(merged);
  newSizes.insert(newSizes.end(), sizes().begin() + endDim + 1, sizes().end());
  return reshape(newSizes);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  dim0 = wrapDim("transpose", dim0, dim());
  dim1 = wrapDim("transpose", dim1, dim());
  if (dim() == 0) return makeView(*this, sizes(), strides(), storageOffset());
  Shape newSizes = sizes();
  Shape newStrides = strides();
  std::swap(newSizes[dim0], newSizes[dim1]);
  std::swap(newStrides[dim0], newStrides[dim1]);
  return makeView(*this, std::move(newSizes), std::move(newStrides), storageOffset());
}

Tensor Tensor::t() const {
  if (dim() > 2) {
    throw ValueError(concat("t: expects a tensor with <= 2 dimensions, but self is ", dim(),
                            "D (shape ", shapeToString(sizes()), ")"));
  }
  return dim() < 2 ? makeView(*this, sizes(), strides(), storageOffset()) : transpose(0, 1);
}

Tensor Tensor::permute(const Shape& dims) const {
  if (static_cast<int64_t>(dims.size()) != dim()) {
    throw ValueError(concat("permute: number of dims ", shapeToString(dims),
                            " doesn't match the tensor's ", dim(), " dims"));
  }
  Shape newSizes(dims.size());
  Shape newStrides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrapDim("permute", dims[i], dim());
    if (seen[d]) throw ValueError(concat("permute: repeated dim in ", shapeToString(dims)));
    seen[d] = true;
    newSizes[i] = sizes()[d];
    newStrides[i] = strides()[d];
  }
  return makeView(*this, std::move(newSizes), std::move(newStrides), storageOffset());
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrapDim("unsqueeze", d, dim() + 1);
  Shape newSizes = sizes();
  Shape newStrides = strides();
  const int64_t stride = d < dim() ? sizes()[d] * strides()[d] : 1;
  newSizes.insert(newSizes.begin() + d, 1);
  newStrides.insert(newStrides.begin() + d, stride);
  return makeView(*this, std::move(newSizes), std::move(newStrides), storageOffset());
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrapDim("squeeze", d, dim());
  if (dim() == 0 || sizes()[d] != 1) return makeView(*this, sizes(), strides(), storageOffset());
  Shape newSizes = sizes();
  Shape newStrides = strides();
  newSizes.erase(newSizes.begin() + d);
  newStrides.erase(newStrides.begin() + d);
  return makeView(*this, std::move(newSizes), std::move(newStrides), storageOffset());
}

Tensor Tensor::squeeze() const {
  Shape newSizes;
  Shape newStrides;
  for (int64_t d = 0; d < dim(); ++d) {
    if (sizes()[d] == 1) continue;
    newSizes.push_back(sizes()[d]);
    newStrides.push_back(strides()[d]);
  }
  return makeView(*this, std::move(newSizes), std::move(newStrides), storageOffset());
}

Tensor Tensor::expand(const Shape& shape) const {
  const int64_t ndim = static_cast<int64_t>(shape.size());
  if (ndim < dim()) {
    throw ValueError(concat("expand: the number of sizes provided (", ndim,
                            ") must be greater or equal to the number of dimensions in the "
                            "tensor (",
                            dim(), ")"));
  }
  Shape newSizes(ndim);
  Shape newStrides(ndim);
  for (int64_t i = ndim - 1; i >= 0; --i) {
    const int64_t src = i - (ndim - dim());
    const int64_t target = shape[i];
    if (src < 0) {
      if (target < 0) {
        throw ValueError(concat("expand: the expanded size ", target,
                                " is not allowed in a leading, non-existing dimension ", i));
      }
      newSizes[i] = target;
      newStrides[i] = 0;
      continue;
    }
    const int64_t size = sizes()[src];
    if (target == -1 || target == size) {
      newSizes[i] = size;
      newStrides[i] = strides()[src];
    } else if (size == 1 && target >= 0) {
      newSizes[i] = target;
      newStrides[i] = 0;
    } else {
      throw ValueError(concat("expand: the expanded size of the tensor (", target,
                              ") must match the existing size (", size,
                              ") at non-singleton dimension ", i, ". Target sizes: ",
                              shapeToString(shape), ". Tensor sizes: ", shapeToString(sizes())));
    }
  }
  return makeView(*this, std::move(newSizes), std::move(newStrides), storageOffset());
}

Tensor Tensor::asStrided(const Shape& newSizes, const Shape& newStrides, int64_t offset) const {
  if (newSizes.size() != newStrides.size()) {
    throw ValueError(concat("asStrided: sizes ", shapeToString(newSizes), " and strides ",
                            shapeToString(newStrides), " differ in length"));
  }
  int64_t last = offset;
  for (size_t i = 0; i < newSizes.size(); ++i) {
    if (newSizes[i] < 0 || newStrides[i] < 0) {
      throw ValueError(concat("asStrided: negative size or stride (sizes ",
                              shapeToString(newSizes), ", strides ", shapeToString(newStrides),
                              ")"));
    }
    if (newSizes[i] == 0) last = offset - 1;
    if (last >= offset) last += (newSizes[i] - 1) * newStrides[i];
  }
  const int64_t capacity =
      static_cast<int64_t>(storage()->nbytes() / distlab::elementSize(dtype()));
  if (offset < 0 || last >= capacity) {
    throw ValueError(concat("asStrided: sizes ", shapeToString(newSizes), ", strides ",
                            shapeToString(newStrides), " and offset ", offset,
                            " reach element ", last, " but the storage holds ", capacity,
                            " elements"));
  }
  return makeView(*this, newSizes, newStrides, offset);
}

Tensor Tensor::contiguous() const { return isContiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = detail::makeEmpty(sizes(), dtype(), device());
  out.copy_(*this);
  return out;
}

}  // namespace distlab
