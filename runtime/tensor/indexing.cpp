// indexSelect, gather, indexAdd_, scatterAdd_. Index tensors are int64 (int32
// accepted); every index is bounds-checked and a bad one is reported with the
// dim and the size.
#include <cstring>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/convert.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

using detail::concat;

// Checks the index tensor's dtype and device against `self`'s; true when the
// operation runs on the CPU (else it goes to the device kernel).
bool checkIndexTensor(const char* op, const Tensor& self, const Tensor& index) {
  detail::checkDefined(op, self);
  detail::checkDefined(op, index);
  if (index.dtype() != DType::kInt64 && index.dtype() != DType::kInt32) {
    throw ValueError(concat(op, ": expected an int64 index tensor, got dtype ",
                            dtypeName(index.dtype())));
  }
  detail::checkSameDevice(op, self, index);
  return self.device().isCpu();
}

std::vector<int64_t> indicesOf(const Tensor& index) { return index.toVector<int64_t>(); }

int64_t checkIndex(const char* op, int64_t i, int64_t size, int64_t dim) {
  if (i < -size || i >= size) {
    throw ValueError(concat(op, ": index ", i, " is out of bounds for dimension ", dim,
                            " with size ", size));
  }
  return i < 0 ? i + size : i;
}

// Shape as [outer, size(dim), inner] of a contiguous tensor.
struct Split3 {
  int64_t outer = 1, mid = 1, inner = 1;
};
Split3 split3(const Shape& shape, int64_t dim) {
  Split3 s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    (d < dim ? s.outer : d == dim ? s.mid : s.inner) *= shape[d];
  }
  return s;
}

// Checks gather/scatter shapes: same rank; index.size(d) <= self.size(d) for d != dim.
void checkScatterShapes(const char* op, const Tensor& self, const Tensor& index, int64_t dim,
                        const Tensor* src) {
  if (index.dim() != self.dim()) {
    throw ValueError(concat(op, ": index tensor must have the same number of dimensions (",
                            index.dim(), ") as the input tensor (", self.dim(), ")"));
  }
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != dim && index.sizes()[d] > self.sizes()[d]) {
      throw ValueError(concat(op, ": size of index ", shapeToString(index.sizes()),
                              " does not fit the input ", shapeToString(self.sizes()),
                              " at dimension ", d));
    }
    if (src != nullptr && index.sizes()[d] > src->sizes()[d]) {
      throw ValueError(concat(op, ": size of index ", shapeToString(index.sizes()),
                              " exceeds the source ", shapeToString(src->sizes()),
                              " at dimension ", d));
    }
  }
}

// Visits every position of `shape` in row-major order with its coordinates.
template <typename Fn>
void forEachCoord(const Shape& shape, Fn fn) {
  const int64_t n = shapeNumel(shape);
  std::vector<int64_t> coord(shape.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    fn(linear, coord);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++coord[d] < shape[d]) break;
      coord[d] = 0;
    }
  }
}

int64_t offsetOf(const std::vector<int64_t>& coord, const Shape& strides) {
  int64_t off = 0;
  for (size_t d = 0; d < coord.size(); ++d) off += coord[d] * strides[d];
  return off;
}

}  // namespace

Tensor Tensor::indexSelect(int64_t dim, const Tensor& index) const {
  const bool cpu = checkIndexTensor("indexSelect", *this, index);
  if (index.dim() > 1) {
    throw ValueError(concat("indexSelect: index must be 1-D, got shape ",
                            shapeToString(index.sizes())));
  }
  dim = detail::wrapDim("indexSelect", dim, this->dim());
  Shape outShape = sizes();
  if (!outShape.empty()) outShape[dim] = index.numel();
  Tensor out = detail::makeEmpty(outShape, dtype(), device());
  if (!cpu) {
    runKernel(device(), "indexSelect", {out}, {*this, index.to(device())}, {}, {dim});
    return out;
  }
  const auto idx = indicesOf(index);
  const Tensor src = contiguous();
  const int64_t size = this->dim() == 0 ? 1 : sizes()[dim];
  const Split3 s = split3(sizes(), dim);
  const size_t rowBytes = static_cast<size_t>(s.inner) * elementSize();
  const char* in = static_cast<const char*>(src.rawData());
  char* dst = static_cast<char*>(out.rawData());
  for (int64_t o = 0; o < s.outer; ++o) {
    for (size_t j = 0; j < idx.size(); ++j) {
      const int64_t i = checkIndex("indexSelect", idx[j], size, dim);
      std::memcpy(dst + (o * static_cast<int64_t>(idx.size()) + static_cast<int64_t>(j)) *
                            static_cast<int64_t>(rowBytes),
                  in + (o * s.mid + i) * static_cast<int64_t>(rowBytes), rowBytes);
    }
  }
  return out;
}

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  const bool cpu = checkIndexTensor("gather", *this, index);
  dim = detail::wrapDim("gather", dim, this->dim());
  checkScatterShapes("gather", *this, index, dim, nullptr);
  Tensor out = detail::makeEmpty(index.sizes(), dtype(), device());
  if (!cpu) {
    runKernel(device(), "gather", {out}, {*this, index.to(device())}, {}, {dim});
    return out;
  }
  const auto idx = indicesOf(index);
  const int64_t size = this->dim() == 0 ? 1 : sizes()[dim];
  dispatchDType(dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(rawData());
    T* dst = static_cast<T*>(out.rawData());
    forEachCoord(index.sizes(), [&](int64_t linear, std::vector<int64_t>& coord) {
      const int64_t saved = coord.empty() ? 0 : coord[dim];
      if (!coord.empty()) coord[dim] = checkIndex("gather", idx[linear], size, dim);
      dst[linear] = in[offsetOf(coord, strides())];
      if (!coord.empty()) coord[dim] = saved;
    });
  });
  return out;
}

Tensor& Tensor::scatterAdd_(int64_t dim, const Tensor& index, const Tensor& source) {
  const bool cpu = checkIndexTensor("scatterAdd_", *this, index);
  detail::checkSameDevice("scatterAdd_", *this, source);
  dim = detail::wrapDim("scatterAdd_", dim, this->dim());
  checkScatterShapes("scatterAdd_", *this, index, dim, &source);
  if (source.dtype() != dtype()) {
    throw Error(concat("scatterAdd_: expected source dtype ", dtypeName(dtype()), ", got ",
                       dtypeName(source.dtype())));
  }
  if (!cpu) {
    runKernel(device(), "scatterAdd_", {*this}, {*this, index.to(device()), source}, {}, {dim});
    return *this;
  }
  const auto idx = indicesOf(index);
  const int64_t size = this->dim() == 0 ? 1 : sizes()[dim];
  dispatchDType(dtype(), [&](auto tag) {
    using T = decltype(tag);
    using M = detail::OpMathT<T>;
    T* self = static_cast<T*>(rawData());
    const T* src = static_cast<const T*>(source.rawData());
    forEachCoord(index.sizes(), [&](int64_t linear, std::vector<int64_t>& coord) {
      const T value = src[offsetOf(coord, source.strides())];
      const int64_t saved = coord.empty() ? 0 : coord[dim];
      if (!coord.empty()) coord[dim] = checkIndex("scatterAdd_", idx[linear], size, dim);
      T& target = self[offsetOf(coord, strides())];
      target = detail::castTo<T>(static_cast<M>(target) + static_cast<M>(value));
      if (!coord.empty()) coord[dim] = saved;
    });
  });
  return *this;
}

Tensor& Tensor::indexAdd_(int64_t dim, const Tensor& index, const Tensor& source) {
  const bool cpu = checkIndexTensor("indexAdd_", *this, index);
  detail::checkSameDevice("indexAdd_", *this, source);
  dim = detail::wrapDim("indexAdd_", dim, this->dim());
  if (index.dim() > 1) {
    throw ValueError(concat("indexAdd_: index must be 1-D, got shape ",
                            shapeToString(index.sizes())));
  }
  Shape expected = sizes();
  if (!expected.empty()) expected[dim] = index.numel();
  if (source.sizes() != expected) {
    throw ValueError(concat("indexAdd_: source shape ", shapeToString(source.sizes()),
                            " does not match the expected ", shapeToString(expected),
                            " (self ", shapeToString(sizes()), " with ", index.numel(),
                            " indices along dim ", dim, ")"));
  }
  if (!cpu) {
    runKernel(device(), "indexAdd_", {*this}, {*this, index.to(device()), source}, {}, {dim});
    return *this;
  }
  const auto idx = indicesOf(index);
  const int64_t size = this->dim() == 0 ? 1 : sizes()[dim];
  for (size_t j = 0; j < idx.size(); ++j) {
    const int64_t i = checkIndex("indexAdd_", idx[j], size, dim);
    if (this->dim() == 0) {
      add_(source);
    } else {
      select(dim, i).add_(source.select(dim, static_cast<int64_t>(j)));
    }
  }
  return *this;
}

}  // namespace distlab
