// copy_, fill_, zero_ and dtype/device conversion.
//
// Note [Cross-device copies]
// copy_ involving a device other than the CPU runs the "copy_" kernel of the
// non-CPU side, which receives {dst} and {src} of equal shape (the source is
// broadcast first; a CPU source is converted to dst's dtype on the host, any
// other dtype conversion is the kernel's). Meta takes part shape-only:
// copying into a meta tensor checks shapes and moves nothing; copying out of
// one throws, since there is no data to copy.
#include <cstring>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/convert.hpp"
#include "runtime/tensor/detail/elementwise.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {

namespace {

// dst.copy_(src) where at least one side is not on the CPU.
void copyAcrossDevices(const Tensor& dst, const Tensor& src) {
  if (src.device().isMeta() && !dst.device().isMeta()) {
    throw Error(detail::concat("copy_: cannot copy out of a meta tensor into ", dst.device().str(),
                               " (meta tensors have no data; initialise the destination instead)"));
  }
  // A CPU source is converted here; a device kernel converts its own dtypes.
  Tensor source = src.device().isCpu() ? src.to(dst.dtype()) : src;
  if (source.sizes() != dst.sizes()) source = source.expand(dst.sizes());
  const Device device = dst.device().isCpu() ? source.device() : dst.device();
  runKernel(device, "copy_", {dst}, {source});
}

}  // namespace

Tensor& Tensor::copy_(const Tensor& src) {
  detail::checkDefined("copy_", *this);
  detail::checkDefined("copy_", src);
  if (!device().isCpu() || !src.device().isCpu()) {
    if (src.sizes() != sizes() &&
        detail::broadcastFor("copy_", sizes(), src.sizes()) != sizes()) {
      throw Error(detail::concat("copy_: source of shape ", shapeToString(src.sizes()),
                                 " cannot be broadcast to destination shape ",
                                 shapeToString(sizes())));
    }
    copyAcrossDevices(*this, src);
    return *this;
  }
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
  detail::checkDefined("fill_", *this);
  if (!device().isCpu()) {
    runKernel(device(), "fill_", {*this}, {}, {value.toDouble()});
    return *this;
  }
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
  detail::checkDefined("zero_", *this);
  if (!device().isCpu()) return fill_(0);
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
  if (device().isMeta() && !target.isMeta()) {
    throw Error(detail::concat("to: cannot move a meta tensor to ", target.str(),
                               " (it has no data); use toEmpty(", target.str(),
                               ") and initialise it instead"));
  }
  Tensor out = detail::makeEmpty(sizes(), dtype(), target);
  out.copy_(*this);
  return out;
}

Tensor Tensor::toEmpty(Device target) const {
  detail::checkDefined("toEmpty", *this);
  return detail::makeEmpty(sizes(), dtype(), target);
}

}  // namespace distlab
