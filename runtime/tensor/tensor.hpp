#pragma once
// Tensor: a strided view (sizes, strides, offset, dtype) of a shared Storage.
//
// Layering (docs/DESIGN.md, "Layers and folders"): this layer is raw
// computation. Nothing here records an autograd graph; the differentiable
// versions of these operations live in
// runtime/autograd (namespace distlab::ops) and call these kernels. A Tensor
// nevertheless carries an AutogradMeta slot (requires_grad, .grad, grad_fn)
// because PyTorch's API puts those on the tensor; the autograd layer fills it.
//
// Semantics follow PyTorch: broadcasting for binary elementwise ops, type
// promotion float64 > float32 > bfloat16/float16 > int64 > int32 > int16 >
// int8/uint8 > bool (float16 with bfloat16 promotes to float32), views share
// storage, `contiguous()` returns `*this` when already contiguous. distlab has
// no int16, so int8 with uint8 promotes to int32. As in PyTorch, a 0-dim tensor
// or a Scalar only changes the result type when it is of a higher category
// (bool < integral < floating): int64 tensor + 2.5 -> float32, float32 tensor *
// 0-dim float64 tensor -> float32. Kernels are contiguous fast paths plus one
// strided iterator (detail/strided_loop.hpp, Note [Strided iteration]).
// Every misuse (shape, dtype, device, index) throws distlab::Error (ValueError
// for bad arguments) naming the operation and the offending values.
//
// Thread-safety: a Tensor handle is a value (shared_ptr copy); concurrent reads
// are safe, concurrent writes to the same elements are the caller's business.
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor/device.hpp"
#include "runtime/tensor/dtype.hpp"
#include "runtime/tensor/generator.hpp"
#include "runtime/tensor/storage.hpp"

namespace distlab {

using Shape = std::vector<int64_t>;
struct AutogradMeta;  // runtime/tensor/autograd_meta.hpp

struct TensorOptions {
  DType dtype = DType::kFloat32;
  Device device = Device::cpu();
  bool requiresGrad = false;

  TensorOptions withDType(DType d) const { auto o = *this; o.dtype = d; return o; }
  TensorOptions withDevice(Device d) const { auto o = *this; o.device = d; return o; }
  TensorOptions withRequiresGrad(bool r) const { auto o = *this; o.requiresGrad = r; return o; }
};

// A Python-like scalar: keeps integers exact (int64) and floats as double.
class Scalar {
 public:
  Scalar(double v) : isIntegral_(false), d_(v) {}             // NOLINT
  Scalar(float v) : isIntegral_(false), d_(v) {}              // NOLINT
  Scalar(int v) : isIntegral_(true), i_(v) {}                 // NOLINT
  Scalar(int64_t v) : isIntegral_(true), i_(v) {}             // NOLINT
  Scalar(bool v) : isIntegral_(true), i_(v ? 1 : 0) {}        // NOLINT
  bool isIntegral() const { return isIntegral_; }
  double toDouble() const { return isIntegral_ ? static_cast<double>(i_) : d_; }
  int64_t toInt() const { return isIntegral_ ? i_ : static_cast<int64_t>(d_); }

 private:
  bool isIntegral_;
  double d_ = 0.0;
  int64_t i_ = 0;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape sizes;
  Shape strides;
  int64_t offset = 0;  // in elements
  DType dtype = DType::kFloat32;
  std::shared_ptr<AutogradMeta> autograd;  // null until autograd touches it
};

class Tensor {
 public:
  Tensor() = default;  // undefined tensor (defined() == false)
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata -----------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  int64_t dim() const;
  const Shape& sizes() const;
  const Shape& strides() const;
  int64_t size(int64_t dim) const;    // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t storageOffset() const;
  int64_t numel() const;
  DType dtype() const;
  Device device() const;
  size_t elementSize() const;
  size_t nbytes() const;              // numel() * elementSize()
  bool isContiguous() const;
  bool sharesStorageWith(const Tensor& other) const;
  const std::shared_ptr<Storage>& storage() const;
  TensorOptions options() const;
  // Pointer to element [0,...,0] (storage data + offset). Checks the dtype.
  template <typename T> T* data() const;
  void* rawData() const;
  // The single value of a one-element tensor, converted to T.
  template <typename T> T item() const;
  TensorImpl* impl() const { return impl_.get(); }
  // Identity of the underlying impl (two handles of one tensor compare equal).
  bool isSame(const Tensor& other) const { return impl_ == other.impl_; }

  // ---- autograd slots (filled by runtime/autograd; see autograd_meta.hpp) ---
  bool requiresGrad() const;
  Tensor& setRequiresGrad(bool value);  // only on leaves of floating dtype
  const Tensor& grad() const;              // undefined when none accumulated
  Tensor& mutableGrad();                   // creates the meta if needed
  void setGrad(const Tensor& grad);
  bool isLeaf() const;                     // no grad_fn
  AutogradMeta* autogradMeta() const;      // may be null
  AutogradMeta& ensureAutogradMeta();
  // A new handle sharing storage, without autograd history (PyTorch detach()).
  Tensor detach() const;

  // ---- views (share storage) ----------------------------------------------
  Tensor view(const Shape& shape) const;     // one dim may be -1; needs compatible strides
  Tensor reshape(const Shape& shape) const;  // view when possible, else a copy
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor flatten(int64_t startDim = 0, int64_t endDim = -1) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;  // 2-D transpose
  Tensor permute(const Shape& dims) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;
  Tensor squeeze() const;                    // drops every size-1 dim
  Tensor expand(const Shape& shape) const;   // broadcast view (stride 0)
  Tensor asStrided(const Shape& sizes, const Shape& strides, int64_t offset) const;
  Tensor contiguous() const;                 // *this if contiguous, else a copy
  Tensor clone() const;                      // contiguous copy, new storage

  // ---- conversion and copy --------------------------------------------------
  Tensor to(DType dtype) const;              // *this when already that dtype
  // A contiguous copy on `device` (*this when already there); cross-device
  // copies follow Note [Cross-device copies] (copy.cpp). A meta tensor cannot
  // move to a device with memory: it has no values (use toEmpty).
  Tensor to(Device device) const;
  // An uninitialised contiguous tensor of this shape and dtype on `device`,
  // without autograd meta (PyTorch: torch.empty_like(t, device=...)); how a
  // model built on meta is materialised.
  Tensor toEmpty(Device device) const;
  // Copies src into *this elementwise (broadcasting src), converting dtypes.
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(Scalar value);
  Tensor& zero_();

  // ---- elementwise, out of place (broadcasting, type promotion) --------------
  Tensor add(const Tensor& other, Scalar alpha = 1) const;
  Tensor add(Scalar other) const;
  Tensor sub(const Tensor& other, Scalar alpha = 1) const;
  Tensor sub(Scalar other) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(Scalar other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(Scalar other) const;
  Tensor neg() const;
  Tensor pow(Scalar exponent) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor gelu() const;  // exact (erf) form, PyTorch's default
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  // Comparisons return bool tensors.
  Tensor eq(const Tensor& other) const;
  Tensor eq(Scalar other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(Scalar other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(Scalar other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(Scalar other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(Scalar other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(Scalar other) const;
  // Bitwise ops on integral/bool tensors.
  Tensor bitwiseAnd(const Tensor& other) const;
  Tensor bitwiseOr(const Tensor& other) const;
  Tensor bitwiseXor(const Tensor& other) const;
  Tensor maskedFill(const Tensor& mask, Scalar value) const;

  // ---- elementwise, in place (the result keeps *this's dtype) ----------------
  Tensor& add_(const Tensor& other, Scalar alpha = 1);
  Tensor& add_(Scalar other);
  Tensor& sub_(const Tensor& other, Scalar alpha = 1);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(Scalar other);
  Tensor& div_(const Tensor& other);
  Tensor& div_(Scalar other);
  Tensor& neg_();
  Tensor& relu_();
  Tensor& sqrt_();
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max);
  Tensor& maximum_(const Tensor& other);
  Tensor& minimum_(const Tensor& other);
  Tensor& addcmul_(const Tensor& a, const Tensor& b, Scalar value = 1);  // += value*a*b
  Tensor& addcdiv_(const Tensor& a, const Tensor& b, Scalar value = 1);  // += value*a/b
  Tensor& lerp_(const Tensor& end, Scalar weight);
  Tensor& maskedFill_(const Tensor& mask, Scalar value);

  // ---- reductions ------------------------------------------------------------
  // Empty `dims` reduces over every dimension. Float sums accumulate in double
  // (float32/64) or float (half types); integer sums in int64.
  Tensor sum(const Shape& dims = {}, bool keepdim = false) const;
  Tensor mean(const Shape& dims = {}, bool keepdim = false) const;
  Tensor prod(const Shape& dims = {}, bool keepdim = false) const;
  Tensor norm(double p = 2.0, const Shape& dims = {}, bool keepdim = false) const;
  Tensor max() const;  // over all elements
  Tensor min() const;
  // Max/min over several dims (empty: all), values only (torch.amax/amin).
  Tensor amax(const Shape& dims = {}, bool keepdim = false) const;
  Tensor amin(const Shape& dims = {}, bool keepdim = false) const;
  // Along one dim: values and indices (int64), like torch.max(dim).
  std::pair<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::pair<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor argmin(int64_t dim, bool keepdim = false) const;  // ties: first index
  Tensor var(const Shape& dims, bool unbiased = true, bool keepdim = false) const;

  // ---- linear algebra (OpenBLAS for float32/float64; half types accumulate in float32)
  Tensor matmul(const Tensor& other) const;  // torch.matmul rules (1-D, 2-D, batched)
  Tensor mm(const Tensor& other) const;      // 2-D only
  Tensor bmm(const Tensor& other) const;     // 3-D only

  Tensor softmax(int64_t dim) const;
  Tensor logSoftmax(int64_t dim) const;

  // ---- indexing --------------------------------------------------------------
  Tensor indexSelect(int64_t dim, const Tensor& index) const;  // index: int64 1-D
  Tensor gather(int64_t dim, const Tensor& index) const;
  // self[dim][index[i]] += source[i] (accumulates duplicates).
  Tensor& indexAdd_(int64_t dim, const Tensor& index, const Tensor& source);
  Tensor& scatterAdd_(int64_t dim, const Tensor& index, const Tensor& source);

  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t splitSize, int64_t dim = 0) const;
  std::vector<Tensor> split(const Shape& splitSizes, int64_t dim = 0) const;

  // Elementwise exact equality of shape, dtype and values.
  bool equal(const Tensor& other) const;
  // |a - b| <= atol + rtol * |b| for every element (broadcast shapes must match).
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8) const;
  // PyTorch-like printing: "tensor([[1., 2.],\n        [3., 4.]], dtype=float64)"
  // (rows on separate lines; more than 1000 elements summarised with "...").
  std::string toString() const;
  // All elements converted to T, in row-major order.
  template <typename T> std::vector<T> toVector() const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

// ---- creation ----------------------------------------------------------------
Tensor empty(const Shape& shape, TensorOptions options = {});
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, Scalar value, TensorOptions options = {});
Tensor emptyLike(const Tensor& like);
Tensor zerosLike(const Tensor& like);
Tensor onesLike(const Tensor& like);
// [start, end) with step; dtype int64 unless options say otherwise.
Tensor arange(int64_t end, TensorOptions options = {DType::kInt64});
Tensor arange(double start, double end, double step, TensorOptions options = {});
Tensor rand(const Shape& shape, Generator& gen, TensorOptions options = {});   // U[0,1)
Tensor randn(const Shape& shape, Generator& gen, TensorOptions options = {});  // N(0,1)
// U[low, high) elementwise (floating dtypes), for PyTorch-style init.
Tensor uniform(const Shape& shape, double low, double high, Generator& gen,
               TensorOptions options = {});
Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen,
               TensorOptions options = {DType::kInt64});
// From values in row-major order; shape defaults to {values.size()}.
template <typename T>
Tensor fromVector(const std::vector<T>& values, const Shape& shape = {},
                  TensorOptions options = {dtypeOf<T>()});
Tensor scalarTensor(Scalar value, TensorOptions options = {});

// ---- multi-tensor -------------------------------------------------------------
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Type promotion of two dtypes (PyTorch's rules).
DType promoteTypes(DType a, DType b);
// The broadcast shape of two shapes; throws naming both shapes.
Shape broadcastShapes(const Shape& a, const Shape& b);
std::string shapeToString(const Shape& shape);  // "[2, 3]"
int64_t shapeNumel(const Shape& shape);

}  // namespace distlab
