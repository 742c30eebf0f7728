// Differentiable view, reshape and join/split ops.
#include <numeric>

#include "runtime/autograd/detail/op_util.hpp"
#include "runtime/autograd/node.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::ops {

using autograd::recordFunction;
using autograd::TensorList;

namespace {

// Backward of any op that only reshapes: the gradient reshaped to the input.
Tensor recordReshapeLike(const char* name, const Tensor& a, Tensor out) {
  return recordFunction(
      name, {a}, std::move(out),
      [sizes = a.sizes()](const TensorList& g, const std::vector<bool>&) {
        return TensorList{g[0].reshape(sizes)};
      },
      false);
}

int64_t wrapDim(int64_t dim, int64_t ndim) { return dim < 0 ? dim + ndim : dim; }

}  // namespace

Tensor reshape(const Tensor& a, const Shape& shape) {
  return recordReshapeLike("ReshapeBackward", a, a.reshape(shape));
}
Tensor view(const Tensor& a, const Shape& shape) {
  return recordReshapeLike("ViewBackward", a, a.view(shape));
}
Tensor unsqueeze(const Tensor& a, int64_t dim) {
  return recordReshapeLike("UnsqueezeBackward", a, a.unsqueeze(dim));
}
Tensor squeeze(const Tensor& a, int64_t dim) {
  return recordReshapeLike("SqueezeBackward", a, a.squeeze(dim));
}
Tensor flatten(const Tensor& a, int64_t startDim, int64_t endDim) {
  return recordReshapeLike("FlattenBackward", a, a.flatten(startDim, endDim));
}

Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1) {
  return recordFunction(
      "TransposeBackward", {a}, a.transpose(dim0, dim1),
      [dim0, dim1](const TensorList& g, const std::vector<bool>&) {
        return TensorList{g[0].transpose(dim0, dim1)};
      },
      false);
}

Tensor permute(const Tensor& a, const Shape& dims) {
  Tensor out = a.permute(dims);
  Shape inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    inverse[static_cast<size_t>(wrapDim(dims[i], a.dim()))] = static_cast<int64_t>(i);
  }
  return recordFunction(
      "PermuteBackward", {a}, out,
      [inverse](const TensorList& g, const std::vector<bool>&) {
        return TensorList{g[0].permute(inverse)};
      },
      false);
}

Tensor expand(const Tensor& a, const Shape& shape) {
  return recordFunction(
      "ExpandBackward", {a}, a.expand(shape),
      [sizes = a.sizes(), dt = a.dtype()](const TensorList& g, const std::vector<bool>&) {
        return TensorList{detail::sumToSize(g[0], sizes, dt)};
      },
      false);
}

Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length) {
  return recordFunction(
      "NarrowBackward", {a}, a.narrow(dim, start, length),
      [sizes = a.sizes(), dt = a.dtype(), dim, start, length](const TensorList& g,
                                                              const std::vector<bool>&) {
        Tensor r = zeros(sizes, detail::plain(dt, g[0].device()));
        r.narrow(dim, start, length).copy_(g[0]);
        return TensorList{r};
      },
      false);
}

Tensor select(const Tensor& a, int64_t dim, int64_t index) {
  return recordFunction(
      "SelectBackward", {a}, a.select(dim, index),
      [sizes = a.sizes(), dt = a.dtype(), dim, index](const TensorList& g,
                                                      const std::vector<bool>&) {
        Tensor r = zeros(sizes, detail::plain(dt, g[0].device()));
        r.select(dim, index).copy_(g[0]);
        return TensorList{r};
      },
      false);
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  Tensor out = distlab::cat(tensors, dim);
  const int64_t d = wrapDim(dim, out.dim());
  std::vector<std::pair<Shape, DType>> metas;
  for (const Tensor& t : tensors) metas.emplace_back(t.sizes(), t.dtype());
  return recordFunction(
      "CatBackward", tensors, out,
      [metas, d](const TensorList& g, const std::vector<bool>& needs) {
        TensorList r(metas.size());
        int64_t offset = 0;
        for (size_t i = 0; i < metas.size(); ++i) {
          const int64_t len = metas[i].first.empty() ? 0 : metas[i].first[d];
          if (needs[i]) r[i] = g[0].narrow(d, offset, len).to(metas[i].second);
          offset += len;
        }
        return r;
      },
      false);
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  Tensor out = distlab::stack(tensors, dim);
  const int64_t d = wrapDim(dim, out.dim());
  std::vector<DType> dtypes;
  for (const Tensor& t : tensors) dtypes.push_back(t.dtype());
  return recordFunction(
      "StackBackward", tensors, out,
      [dtypes, d](const TensorList& g, const std::vector<bool>& needs) {
        TensorList r(dtypes.size());
        for (size_t i = 0; i < dtypes.size(); ++i) {
          if (needs[i]) r[i] = g[0].select(d, static_cast<int64_t>(i)).to(dtypes[i]);
        }
        return r;
      },
      false);
}

namespace {

// Records the pieces of `a` along `dim` as the outputs of one node; the backward
// concatenates their gradients (zeros for pieces that got none).
std::vector<Tensor> recordSplit(const char* name, const Tensor& a, TensorList pieces, int64_t dim) {
  std::vector<Shape> shapes;
  for (const Tensor& p : pieces) shapes.push_back(p.sizes());
  recordFunction(
      name, {a}, pieces,
      [shapes, d = wrapDim(dim, a.dim()), dt = a.dtype(), dev = a.device()](
          const TensorList& g, const std::vector<bool>&) {
        TensorList parts;
        for (size_t i = 0; i < shapes.size(); ++i) {
          parts.push_back(g[i].defined() ? g[i] : zeros(shapes[i], detail::plain(dt, dev)));
        }
        return TensorList{distlab::cat(parts, d)};
      },
      false);
  return pieces;
}

}  // namespace

std::vector<Tensor> split(const Tensor& a, int64_t splitSize, int64_t dim) {
  return recordSplit("SplitBackward", a, a.split(splitSize, dim), dim);
}

std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim) {
  return recordSplit("ChunkBackward", a, a.chunk(chunks, dim), dim);
}

}  // namespace distlab::ops
