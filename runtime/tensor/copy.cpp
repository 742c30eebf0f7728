// copy_, fill_, zero_ and dtype/device conversion.
#include <cstring>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/convert.hpp"
#include "runtime/tensor/detail/elementwise.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {

Tensor& Tensor::copy_(const Tensor& src) {
  detail::checkCpu("copy_", *this);
  detail::checkCpu("copy_", src);
  Tensor source = src;
  // A source that shares memory with *this in another layout (t.copy_(t.t()))
  // would be overwritten while it is read: copy it out first.
  const bool sameLayout = src.sizes() == sizes() && src.strides() == strides() &&
                          src.storageOffset() == storageOffset();
  if (src.sharesStorageWith(*this) && !sameLayout) source = src.clone();
  if (src.sizes() != sizes()) {
    const Shape target = detail::broadcastFor("copy_", sizes(), src.sizes());
    if (target != sizes()) {
      throw Error(detail::concat("copy_: source of shape ", shapeToString(src.sizes()),
                                 " cannot be broadcast to destination shape ",
                                 shapeToString(sizes())));
    }
    source = source.expand(sizes());
  }
  if (source.dtype() == dtype() && isContiguous() && source.isContiguous()) {
    if (rawData() != source.rawData()) std::memmove(rawData(), source.rawData(), nbytes());
    return *this;
  }
  dispatchDType(dtype(), [&](auto outTag) {
    using O = decltype(outTag);
    dispatchDType(source.dtype(), [&](auto inTag) {
      using I = decltype(inTag);
      detail::unaryKernel<O, I>(*this, source, [](I v) { return detail::castTo<O>(v); });
    });
  });
  return *this;
}

Tensor& Tensor::fill_(Scalar value) {
  detail::checkCpu("fill_", *this);
  dispatchDType(dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = detail::scalarAs<T>(value);
    if (isContiguous()) {
      T* p = static_cast<T*>(rawData());
      const int64_t n = numel();
      for (int64_t i = 0; i < n; ++i) p[i] = v;
      return;
    }
    detail::unaryKernel<T, T>(*this, *this, [v](T) { return v; });
  });
  return *this;
}

Tensor& Tensor::zero_() {
  detail::checkCpu("zero_", *this);
  if (isContiguous()) {
    std::memset(rawData(), 0, nbytes());
    return *this;
  }
  return fill_(0);
}

Tensor Tensor::to(DType target) const {
  detail::checkDefined("to", *this);
  if (target == dtype()) return *this;
  Tensor out = detail::makeEmpty(sizes(), target, device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(Device target) const {
  detail::checkDefined("to", *this);
  if (target == device()) return *this;
  throw Error(detail::concat("to: cannot move a tensor from ", device().str(), " to ",
                             target.str(), " (no CUDA support built yet)"));
}

}  // namespace distlab
