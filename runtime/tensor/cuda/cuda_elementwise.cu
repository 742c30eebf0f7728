// Elementwise CUDA kernels: unary, binary and fused ops, comparisons, fill,
// maskedFill, dtype conversion and strided copies. One kernel per element
// type evaluates an op code (a switch in device code), which keeps the number
// of instantiations, and so the build time, small.
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "runtime/tensor/cuda/cuda_common.cuh"
#include "runtime/tensor/cuda/cuda_kernels.hpp"

namespace distlab::cuda {
namespace {

using detail::Geometry;

enum class Code : int {
  kAdd, kAddScalar, kSubScalar, kMul, kMulScalar, kDiv, kDivScalar, kNeg, kExp, kLog, kSqrt,
  kRsqrt, kTanh, kSigmoid, kRelu, kGelu, kAbs, kSign, kPow, kClamp, kMaximum, kMinimum, kEq,
  kNe, kGt, kLt, kGe, kLe, kAddcmul, kAddcdiv, kLerp, kGeluBackward
};

// Arithmetic type: float stays float, integers compute in int64 or double.
template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;

template <typename M>
__device__ M applyFloat(Code c, M x, M y, M z, double s0, double s1) {
  switch (c) {
    case Code::kExp: return exp(x);
    case Code::kLog: return log(x);
    case Code::kSqrt: return sqrt(x);
    case Code::kRsqrt: return M(1) / sqrt(x);
    case Code::kTanh: return tanh(x);
    case Code::kSigmoid: return M(1) / (M(1) + exp(-x));
    case Code::kGelu: return M(0.5) * x * (M(1) + erf(x * M(0.70710678118654752440)));
    case Code::kPow: return pow(x, static_cast<M>(s0));
    case Code::kAddcdiv: return x + static_cast<M>(s0) * y / z;
    case Code::kLerp: {
      const M w = static_cast<M>(s0);
      return w < M(0.5) ? x + w * (y - x) : y - (y - x) * (M(1) - w);
    }
    case Code::kGeluBackward: {
      const M cdf = M(0.5) * (M(1) + erf(y * M(0.70710678118654752440)));
      const M pdf = M(0.39894228040143267794) * exp(M(-0.5) * y * y);
      return x * (cdf + y * pdf);
    }
    default: return x;
  }
  (void)s1;
}

template <typename M>
__device__ M apply(Code c, M x, M y, M z, double s0, double s1) {
  const M k = static_cast<M>(s0);
  switch (c) {
    case Code::kAdd: return x + k * y;
    case Code::kAddScalar: return x + k;
    case Code::kSubScalar: return x - k;
    case Code::kMul: return x * y;
    case Code::kMulScalar: return x * k;
    case Code::kDiv: return x / y;
    case Code::kDivScalar: return x / k;
    case Code::kNeg: return -x;
    case Code::kRelu: return x < M(0) ? M(0) : x;
    case Code::kAbs: return x < M(0) ? -x : x;
    case Code::kSign: return x > M(0) ? M(1) : (x < M(0) ? M(-1) : M(0));
    case Code::kClamp: {
      M v = x;
      if (v != v) return v;
      if (static_cast<double>(v) < s0) v = static_cast<M>(s0);
      if (static_cast<double>(v) > s1) v = static_cast<M>(s1);
      return v;
    }
    case Code::kMaximum: return x != x ? x : (y != y ? y : (x > y ? x : y));
    case Code::kMinimum: return x != x ? x : (y != y ? y : (x < y ? x : y));
    case Code::kEq: return x == y;
    case Code::kNe: return x != y;
    case Code::kGt: return x > y;
    case Code::kLt: return x < y;
    case Code::kGe: return x >= y;
    case Code::kLe: return x <= y;
    case Code::kAddcmul: return x + k * y * z;
    default:
      if constexpr (std::is_floating_point_v<M>) {
        return applyFloat<M>(c, x, y, z, s0, s1);
      } else {
        return static_cast<M>(applyFloat<double>(c, x, y, z, s0, s1));
      }
  }
}

// out[i] = f(a[i], b[i], c[i]); operands absent in the op alias `a`.
template <typename O, typename T>
__global__ void mapKernel(Geometry g, Code code, double s0, double s1, O* out, const T* a,
                          const T* b, const T* c) {
  using M = Acc<T>;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < g.numel;
       i += int64_t{blockDim.x} * gridDim.x) {
    const M x = static_cast<M>(a[detail::offsetOf(g, 1, i)]);
    const M y = static_cast<M>(b[detail::offsetOf(g, 2, i)]);
    const M z = static_cast<M>(c[detail::offsetOf(g, 3, i)]);
    out[detail::offsetOf(g, 0, i)] = static_cast<O>(apply<M>(code, x, y, z, s0, s1));
  }
}

template <typename O, typename I>
__global__ void convertKernel(Geometry g, O* out, const I* in) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < g.numel;
       i += int64_t{blockDim.x} * gridDim.x) {
    out[detail::offsetOf(g, 0, i)] = static_cast<O>(in[detail::offsetOf(g, 1, i)]);
  }
}

template <typename T>
__global__ void fillKernel(Geometry g, T* out, T value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < g.numel;
       i += int64_t{blockDim.x} * gridDim.x) {
    out[detail::offsetOf(g, 0, i)] = value;
  }
}

// Calls fn(W{}) with the unsigned integer type of `t`'s element size: what
// any dtype needs for a same-dtype copy or a fill (float16, bfloat16 and int8
// included) is its elements moved as raw bits, by convertKernel<W, W> and
// fillKernel<W>, without kernels per dtype.
template <typename Fn>
void dispatchBits(const Tensor& t, Fn&& fn) {
  switch (elementSize(t.dtype())) {
    case 1: fn(uint8_t{}); return;
    case 2: fn(uint16_t{}); return;
    case 4: fn(uint32_t{}); return;
    default: fn(uint64_t{}); return;
  }
}

// fill_ for a dtype without typed kernels: the value converted on the host
// (the CPU's conversion, rounding as it does), then copied as bits.
void fillBits(const Tensor& out, const Geometry& g, double value) {
  const Tensor one = full({1}, value, TensorOptions{out.dtype()});
  dispatchBits(out, [&](auto tag) {
    using W = decltype(tag);
    W bits{};
    std::memcpy(&bits, one.rawData(), sizeof(W));
    fillKernel<W><<<detail::blocksFor(g.numel), detail::kThreads, 0, detail::streamOf(out)>>>(
        g, static_cast<W*>(out.rawData()), bits);
  });
}

template <typename T>
__global__ void maskedFillKernel(Geometry g, T* out, const bool* mask, T value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < g.numel;
       i += int64_t{blockDim.x} * gridDim.x) {
    if (mask[detail::offsetOf(g, 1, i)]) out[detail::offsetOf(g, 0, i)] = value;
  }
}

const std::unordered_map<std::string, Code>& codes() {
  static const std::unordered_map<std::string, Code> table = {
      {"add", Code::kAdd}, {"sub", Code::kAdd}, {"add_", Code::kAdd}, {"sub_", Code::kAdd},
      {"mul", Code::kMul}, {"mul_", Code::kMul}, {"div", Code::kDiv}, {"div_", Code::kDiv},
      {"neg", Code::kNeg}, {"neg_", Code::kNeg}, {"exp", Code::kExp}, {"log", Code::kLog},
      {"sqrt", Code::kSqrt}, {"sqrt_", Code::kSqrt}, {"rsqrt", Code::kRsqrt},
      {"tanh", Code::kTanh}, {"sigmoid", Code::kSigmoid}, {"relu", Code::kRelu},
      {"relu_", Code::kRelu}, {"gelu", Code::kGelu}, {"abs", Code::kAbs}, {"sign", Code::kSign},
      {"pow", Code::kPow}, {"clamp_", Code::kClamp}, {"maximum", Code::kMaximum},
      {"maximum_", Code::kMaximum}, {"minimum", Code::kMinimum}, {"minimum_", Code::kMinimum},
      {"eq", Code::kEq}, {"ne", Code::kNe}, {"gt", Code::kGt}, {"lt", Code::kLt},
      {"ge", Code::kGe}, {"le", Code::kLe}, {"addcmul_", Code::kAddcmul},
      {"addcdiv_", Code::kAddcdiv}, {"lerp_", Code::kLerp},
      {"gelu_backward", Code::kGeluBackward}};
  return table;
}

// A binary op name with one input takes its scalar operand from scalars[0].
Code scalarVariant(Code c) {
  switch (c) {
    case Code::kAdd: return Code::kAddScalar;
    case Code::kMul: return Code::kMulScalar;
    case Code::kDiv: return Code::kDivScalar;
    default: return c;
  }
}

bool isComparison(Code c) { return c >= Code::kEq && c <= Code::kLe; }

// Elementwise ops: outputs {out}, inputs {a[, b[, c]]}, scalars as the drivers pass them
// (add/sub: alpha or the scalar operand; sub with a scalar subtracts scalars[0]).
void elementwise(const KernelArgs& args) {
  const std::string name = args.op;
  Code code = codes().at(name);
  const Tensor& out = args.outputs[0];
  const Tensor& a = args.inputs[0];
  const size_t n = args.inputs.size();
  const bool scalarOperand = (n == 1 && (code <= Code::kDiv || isComparison(code)));
  if (n == 1 && code <= Code::kDiv) code = name.rfind("sub", 0) == 0 ? Code::kSubScalar
                                                                     : scalarVariant(code);
  const double s0 = args.scalars.empty() ? 0.0 : args.scalars[0];
  const double s1 = args.scalars.size() > 1 ? args.scalars[1] : 0.0;
  const Tensor scalarTensorOp = scalarOperand && isComparison(code)
                                    ? full(a.sizes(), s0, TensorOptions{a.dtype(), a.device()})
                                    : Tensor();
  const Tensor& b = n > 1 ? args.inputs[1] : (scalarTensorOp.defined() ? scalarTensorOp : a);
  const Tensor& c = n > 2 ? args.inputs[2] : a;
  const Tensor* ops[] = {&out, &a, &b, &c};
  const Geometry g = detail::geometryOf(args.op, out.sizes(), ops, 4);
  if (g.numel == 0) return;
  detail::dispatchCuda(args.op, a, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      detail::unsupportedDtype(args.op, a);
    } else if (out.dtype() == DType::kBool) {
      mapKernel<bool, T><<<detail::blocksFor(g.numel), detail::kThreads, 0, detail::streamOf(out)>>>(
          g, code, s0, s1, static_cast<bool*>(out.rawData()), static_cast<const T*>(a.rawData()),
          static_cast<const T*>(b.rawData()), static_cast<const T*>(c.rawData()));
    } else {
      mapKernel<T, T><<<detail::blocksFor(g.numel), detail::kThreads, 0, detail::streamOf(out)>>>(
          g, code, s0, s1, static_cast<T*>(out.rawData()), static_cast<const T*>(a.rawData()),
          static_cast<const T*>(b.rawData()), static_cast<const T*>(c.rawData()));
    }
  });
  detail::checkLaunch(args.op, out);
}

void fill(const KernelArgs& args) {
  const Tensor& out = args.outputs[0];
  const Tensor* ops[] = {&out};
  const Geometry g = detail::geometryOf("fill_", out.sizes(), ops, 1);
  if (g.numel == 0) return;
  if (!detail::hasTypedKernels(out.dtype())) {
    fillBits(out, g, args.scalars[0]);
    return detail::checkLaunch("fill_", out);
  }
  detail::dispatchCuda("fill_", out, [&](auto tag) {
    using T = decltype(tag);
    fillKernel<T><<<detail::blocksFor(g.numel), detail::kThreads, 0, detail::streamOf(out)>>>(
        g, static_cast<T*>(out.rawData()), static_cast<T>(args.scalars[0]));
  });
  detail::checkLaunch("fill_", out);
}

void maskedFill(const KernelArgs& args) {
  const Tensor& out = args.outputs[0];
  const Tensor& mask = args.inputs[1];
  const Tensor* ops[] = {&out, &mask};
  const Geometry g = detail::geometryOf("maskedFill_", out.sizes(), ops, 2);
  if (g.numel == 0) return;
  detail::dispatchCuda("maskedFill_", out, [&](auto tag) {
    using T = decltype(tag);
    maskedFillKernel<T><<<detail::blocksFor(g.numel), detail::kThreads, 0,
                          detail::streamOf(out)>>>(g, static_cast<T*>(out.rawData()),
                                                   static_cast<const bool*>(mask.rawData()),
                                                   static_cast<T>(args.scalars[0]));
  });
  detail::checkLaunch("maskedFill_", out);
}

}  // namespace

// dst[...] = src[...] converted, both on one CUDA device, any strides.
void convertOnDevice(const Tensor& dst, const Tensor& src) {
  const Tensor* ops[] = {&dst, &src};
  const Geometry g = detail::geometryOf("copy_", dst.sizes(), ops, 2);
  if (g.numel == 0) return;
  if (dst.dtype() == src.dtype()) {  // any dtype: the bits move unchanged
    if (dst.isContiguous() && src.isContiguous()) {
      check(cudaMemcpyAsync(dst.rawData(), src.rawData(), dst.nbytes(), cudaMemcpyDeviceToDevice,
                            detail::streamOf(dst)),
            "copy_", dst.device().index);
      return;
    }
    dispatchBits(dst, [&](auto tag) {
      using W = decltype(tag);
      convertKernel<W, W><<<detail::blocksFor(g.numel), detail::kThreads, 0,
                          detail::streamOf(dst)>>>(g, static_cast<W*>(dst.rawData()),
                                                   static_cast<const W*>(src.rawData()));
    });
    return detail::checkLaunch("copy_", dst);
  }
  detail::dispatchCuda("copy_", dst, [&](auto outTag) {
    using O = decltype(outTag);
    detail::dispatchCuda("copy_", src, [&](auto inTag) {
      using I = decltype(inTag);
      convertKernel<O, I><<<detail::blocksFor(g.numel), detail::kThreads, 0,
                            detail::streamOf(dst)>>>(g, static_cast<O*>(dst.rawData()),
                                                     static_cast<const I*>(src.rawData()));
    });
  });
  detail::checkLaunch("copy_", dst);
}

void registerElementwiseKernels() {
  for (const auto& [name, code] : codes()) registerKernel(name, DeviceType::kCUDA, &elementwise);
  registerKernel("fill_", DeviceType::kCUDA, &fill);
  registerKernel("maskedFill_", DeviceType::kCUDA, &maskedFill);
}

}  // namespace distlab::cuda
