// Shared helpers (detail/tensor_util.hpp) and type promotion.
#include "runtime/tensor/detail/tensor_util.hpp"

#include "runtime/core/check.hpp"
#include "runtime/tensor/dispatch.hpp"

namespace distlab {
namespace detail {

void checkDefined(const char* op, const Tensor& t) {
  if (!t.defined()) throw Error(concat(op, ": expected a defined tensor but got an undefined one"));
}

Tensor hostValues(const char* op, const Tensor& t) {
  checkDefined(op, t);
  const Device device = t.device();
  if (device.isCpu()) return t;
  if (device.isMeta()) throwNoData(op, t);
  return t.to(Device::cpu());
}

int64_t wrapDim(const char* op, int64_t dim, int64_t ndim) {
  const int64_t range = ndim == 0 ? 1 : ndim;
  if (dim < -range || dim >= range) {
    throw ValueError(concat(op, ": dimension out of range (expected to be in range of [", -range,
                            ", ", range - 1, "], but got ", dim, ")"));
  }
  return dim < 0 ? dim + range : dim;
}

Shape contiguousStrides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = expected;
    expected *= std::max<int64_t>(sizes[d], 1);
  }
  return strides;
}

Tensor makeEmpty(const Shape& sizes, DType dtype, Device device) {
  for (int64_t s : sizes) {
    if (s < 0) {
      throw ValueError(concat("empty: negative dimension in shape ", shapeToString(sizes)));
    }
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage =
      Storage::allocate(static_cast<size_t>(shapeNumel(sizes)) * elementSize(dtype), device);
  impl->sizes = sizes;
  impl->strides = contiguousStrides(sizes);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor makeView(const Tensor& t, Shape sizes, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.storage();
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = t.dtype();
  return Tensor(std::move(impl));
}

namespace {
int category(DType d) { return d == DType::kBool ? 0 : (isIntegral(d) ? 1 : 2); }
}  // namespace

DType resultType(const Tensor& a, const Tensor& b) {
  const bool aScalar = a.dim() == 0;
  const bool bScalar = b.dim() == 0;
  if (aScalar != bScalar) {
    const Tensor& dimensioned = aScalar ? b : a;
    const Tensor& zeroDim = aScalar ? a : b;
    if (category(zeroDim.dtype()) <= category(dimensioned.dtype())) return dimensioned.dtype();
  }
  return promoteTypes(a.dtype(), b.dtype());
}

DType resultType(const Tensor& a, const Scalar& s) {
  const DType d = a.dtype();
  if (!s.isIntegral() && category(d) < 2) return DType::kFloat32;
  if (s.isIntegral() && d == DType::kBool) return DType::kInt64;
  return d;
}

bool canCast(DType from, DType to) {
  if (isFloatingPoint(from) && !isFloatingPoint(to)) return false;
  if (from != DType::kBool && to == DType::kBool) return false;
  return true;
}

std::string dtypeTitle(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "Float";
    case DType::kFloat64: return "Double";
    case DType::kFloat16: return "Half";
    case DType::kBFloat16: return "BFloat16";
    case DType::kInt8: return "Char";
    case DType::kUInt8: return "Byte";
    case DType::kInt32: return "Int";
    case DType::kInt64: return "Long";
    case DType::kBool: return "Bool";
  }
  return "?";
}

void checkInplaceCast(const char* op, DType result, DType self) {
  if (!canCast(result, self)) {
    throw Error(concat(op, ": result type ", dtypeTitle(result),
                       " can't be cast to the desired output type ", dtypeTitle(self)));
  }
}

Shape broadcastFor(const char* op, const Shape& a, const Shape& b) {
  try {
    return broadcastShapes(a, b);
  } catch (const Error& e) {
    throw Error(concat(op, ": ", e.what()));
  }
}

}  // namespace detail

DType promoteTypes(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  const bool fa = isFloatingPoint(a);
  const bool fb = isFloatingPoint(b);
  if (fa && fb) {
    if (a == DType::kFloat64 || b == DType::kFloat64) return DType::kFloat64;
    return DType::kFloat32;  // float32 with a half type, or float16 with bfloat16
  }
  if (fa) return a;
  if (fb) return b;
  // Both integral. PyTorch gives int16 for uint8 with int8; distlab has no
  // int16, so that pair promotes to int32, the next type holding both ranges.
  if (a == DType::kInt64 || b == DType::kInt64) return DType::kInt64;
  return DType::kInt32;
}

}  // namespace distlab
