// Tensor metadata, raw data access and the autograd slot accessors.
#include <sstream>

#include "runtime/core/check.hpp"
#include "runtime/tensor/autograd_meta.hpp"
#include "runtime/tensor/detail/convert.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

const TensorImpl& implOf(const Tensor& t, const char* what) {
  if (!t.defined()) throw Error(std::string(what) + ": called on an undefined tensor");
  return *t.impl();
}

}  // namespace

int64_t Tensor::dim() const { return static_cast<int64_t>(implOf(*this, "dim").sizes.size()); }
const Shape& Tensor::sizes() const { return implOf(*this, "sizes").sizes; }
const Shape& Tensor::strides() const { return implOf(*this, "strides").strides; }
int64_t Tensor::size(int64_t d) const { return sizes()[detail::wrapDim("size", d, dim())]; }
int64_t Tensor::stride(int64_t d) const { return strides()[detail::wrapDim("stride", d, dim())]; }
int64_t Tensor::storageOffset() const { return implOf(*this, "storageOffset").offset; }
int64_t Tensor::numel() const { return shapeNumel(implOf(*this, "numel").sizes); }
DType Tensor::dtype() const { return implOf(*this, "dtype").dtype; }
Device Tensor::device() const { return implOf(*this, "device").storage->device(); }
size_t Tensor::elementSize() const { return distlab::elementSize(dtype()); }
size_t Tensor::nbytes() const { return static_cast<size_t>(numel()) * elementSize(); }
const std::shared_ptr<Storage>& Tensor::storage() const { return implOf(*this, "storage").storage; }

bool Tensor::isContiguous() const {
  const TensorImpl& impl = implOf(*this, "isContiguous");
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(impl.sizes.size()) - 1; d >= 0; --d) {
    const int64_t size = impl.sizes[d];
    if (size == 0) return true;
    if (size != 1 && impl.strides[d] != expected) return false;
    expected *= size;
  }
  return true;
}

bool Tensor::sharesStorageWith(const Tensor& other) const {
  return defined() && other.defined() && impl_->storage == other.impl_->storage;
}

TensorOptions Tensor::options() const {
  return TensorOptions{dtype(), device(), requiresGrad()};
}

void* Tensor::rawData() const {
  const TensorImpl& impl = implOf(*this, "rawData");
  if (impl.storage->data() == nullptr && impl.storage->device().isMeta()) {
    detail::throwNoData("rawData", *this);
  }
  return static_cast<char*>(impl.storage->data()) +
         impl.offset * static_cast<int64_t>(distlab::elementSize(impl.dtype));
}

template <typename T>
T* Tensor::data() const {
  if (dtypeOf<T>() != dtype()) {
    throw Error(detail::concat("data<", dtypeName(dtypeOf<T>()), ">: tensor has dtype ",
                               dtypeName(dtype())));
  }
  return static_cast<T*>(rawData());
}

template <typename T>
T Tensor::item() const {
  const Tensor host = detail::hostValues("item", *this);
  if (!host.isSame(*this)) return host.item<T>();
  if (numel() != 1) {
    throw ValueError(detail::concat("item: a Tensor with ", numel(),
                                    " elements cannot be converted to Scalar (shape ",
                                    shapeToString(sizes()), ")"));
  }
  return dispatchDType(dtype(), [&](auto tag) -> T {
    using S = decltype(tag);
    return detail::castTo<T>(*static_cast<const S*>(rawData()));
  });
}

template <typename T>
std::vector<T> Tensor::toVector() const {
  const Tensor src = detail::hostValues("toVector", *this).contiguous();
  std::vector<T> out(static_cast<size_t>(src.numel()));
  dispatchDType(src.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* p = static_cast<const S*>(src.rawData());
    for (size_t i = 0; i < out.size(); ++i) out[i] = detail::castTo<T>(p[i]);
  });
  return out;
}

#define DISTLAB_INSTANTIATE_ACCESSORS(T)          \
  template T* Tensor::data<T>() const;            \
  template T Tensor::item<T>() const;             \
  template std::vector<T> Tensor::toVector<T>() const;
DISTLAB_INSTANTIATE_ACCESSORS(float)
DISTLAB_INSTANTIATE_ACCESSORS(double)
DISTLAB_INSTANTIATE_ACCESSORS(Half)
DISTLAB_INSTANTIATE_ACCESSORS(BFloat16)
DISTLAB_INSTANTIATE_ACCESSORS(int8_t)
DISTLAB_INSTANTIATE_ACCESSORS(uint8_t)
DISTLAB_INSTANTIATE_ACCESSORS(int32_t)
DISTLAB_INSTANTIATE_ACCESSORS(int64_t)
DISTLAB_INSTANTIATE_ACCESSORS(bool)
#undef DISTLAB_INSTANTIATE_ACCESSORS

// ---- autograd slots -----------------------------------------------------------

bool Tensor::requiresGrad() const {
  return impl_ && impl_->autograd && impl_->autograd->requiresGrad;
}

Tensor& Tensor::setRequiresGrad(bool value) {
  implOf(*this, "setRequiresGrad");
  if (value && !isFloatingPoint(dtype())) {
    throw Error(detail::concat(
        "setRequiresGrad: only Tensors of floating point dtype can require gradients (got ",
        dtypeName(dtype()), ")"));
  }
  if (!isLeaf()) {
    if (value) return *this;  // a non-leaf that requires grad already does
    throw Error(
        "setRequiresGrad: you can only change requires_grad flags of leaf variables (this "
        "tensor has a grad_fn); use detach() to get a tensor without history");
  }
  if (!value && !impl_->autograd) return *this;
  ensureAutogradMeta().requiresGrad = value;
  return *this;
}

const Tensor& Tensor::grad() const {
  static const Tensor kUndefined;
  return impl_ && impl_->autograd ? impl_->autograd->grad : kUndefined;
}

Tensor& Tensor::mutableGrad() { return ensureAutogradMeta().grad; }

void Tensor::setGrad(const Tensor& grad) {
  if (grad.defined()) {
    if (grad.sizes() != sizes()) {
      throw Error(detail::concat("setGrad: assigned grad has shape ", shapeToString(grad.sizes()),
                                 " but the tensor has shape ", shapeToString(sizes())));
    }
    if (grad.dtype() != dtype()) {
      throw Error(detail::concat("setGrad: assigned grad has dtype ", dtypeName(grad.dtype()),
                                 " but the tensor has dtype ", dtypeName(dtype())));
    }
  }
  ensureAutogradMeta().grad = grad;
}

bool Tensor::isLeaf() const { return !impl_ || !impl_->autograd || !impl_->autograd->gradFn; }

AutogradMeta* Tensor::autogradMeta() const { return impl_ ? impl_->autograd.get() : nullptr; }

AutogradMeta& Tensor::ensureAutogradMeta() {
  implOf(*this, "ensureAutogradMeta");
  if (!impl_->autograd) impl_->autograd = std::make_shared<AutogradMeta>();
  return *impl_->autograd;
}

Tensor Tensor::detach() const {
  const TensorImpl& impl = implOf(*this, "detach");
  auto out = std::make_shared<TensorImpl>();
  out->storage = impl.storage;
  out->sizes = impl.sizes;
  out->strides = impl.strides;
  out->offset = impl.offset;
  out->dtype = impl.dtype;
  return Tensor(std::move(out));
}

// ---- shapes -------------------------------------------------------------------

std::string shapeToString(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

int64_t shapeNumel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Shape broadcastShapes(const Shape& a, const Shape& b) {
  const size_t ndim = std::max(a.size(), b.size());
  Shape out(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    const int64_t sa = i < ndim - a.size() ? 1 : a[i - (ndim - a.size())];
    const int64_t sb = i < ndim - b.size() ? 1 : b[i - (ndim - b.size())];
    if (sa != sb && sa != 1 && sb != 1) {
      throw Error(detail::concat("shapes ", shapeToString(a), " and ", shapeToString(b),
                                 " cannot be broadcast (dimension ", i, ": ", sa, " vs ", sb,
                                 ")"));
    }
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

}  // namespace distlab
