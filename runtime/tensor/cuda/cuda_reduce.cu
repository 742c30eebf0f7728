// Reductions, softmax and indexing on CUDA. Reductions and softmax use the
// [outer, reduce, inner] layout of Note [Reduction layout] (contiguous input):
// one thread per output element, accumulating in double (floating types) or
// int64 (integers) like the CPU kernels. Index kernels bounds-check on the
// device and report a bad index through a flag read back after the launch.
#include <cmath>
#include <string>
#include <type_traits>

#include "runtime/tensor/cuda/cuda_common.cuh"
#include "runtime/tensor/cuda/cuda_kernels.hpp"

namespace distlab::cuda {
namespace {

enum class Red : int { kSum, kMean, kProd, kNorm, kMax, kMin };

template <typename T>
using RAcc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

template <typename T, typename O>
__global__ void reduceKernel(Red kind, double p, int64_t outer, int64_t reduce, int64_t inner,
                             const T* x, O* out, int64_t* indices) {
  using A = RAcc<T>;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < outer * inner;
       idx += int64_t{blockDim.x} * gridDim.x) {
    const T* base = x + (idx / inner) * reduce * inner + idx % inner;
    A acc = kind == Red::kProd ? A(1) : A(0);
    A best = reduce > 0 ? static_cast<A>(base[0]) : A(0);
    int64_t bestIndex = 0;
    for (int64_t r = 0; r < reduce; ++r) {
      const A v = static_cast<A>(base[r * inner]);
      switch (kind) {
        case Red::kSum: case Red::kMean: acc += v; break;
        case Red::kProd: acc *= v; break;
        case Red::kNorm:
          acc += p == 2.0 ? v * v : (p == 1.0 ? v : (p == 0.0 ? A(v != A(0)) :
                 static_cast<A>(pow(static_cast<double>(v), p))));
          break;
        case Red::kMax: case Red::kMin: {
          const bool nanBest = best != best;
          const bool better = !nanBest && (v != v || (kind == Red::kMax ? v > best : v < best));
          if (r > 0 && better) { best = v; bestIndex = r; }
          break;
        }
      }
    }
    A result = acc;
    if (kind == Red::kMean) result = static_cast<A>(static_cast<double>(acc) / reduce);
    if (kind == Red::kNorm && p != 1.0 && p != 0.0) {
      result = static_cast<A>(pow(static_cast<double>(acc), 1.0 / p));
    }
    if (kind == Red::kMax || kind == Red::kMin) result = best;
    out[idx] = static_cast<O>(result);
    if (indices != nullptr) indices[idx] = bestIndex;
  }
}

template <typename T, bool kLog>
__global__ void softmaxKernel(int64_t outer, int64_t n, int64_t inner, const T* x, T* y) {
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < outer * inner;
       idx += int64_t{blockDim.x} * gridDim.x) {
    const int64_t base = (idx / inner) * n * inner + idx % inner;
    double mx = -INFINITY;
    for (int64_t k = 0; k < n; ++k) mx = fmax(mx, static_cast<double>(x[base + k * inner]));
    double total = 0.0;
    for (int64_t k = 0; k < n; ++k) total += exp(static_cast<double>(x[base + k * inner]) - mx);
    for (int64_t k = 0; k < n; ++k) {
      const double v = static_cast<double>(x[base + k * inner]) - mx;
      y[base + k * inner] = static_cast<T>(kLog ? v - log(total) : exp(v) / total);
    }
  }
}

// out[o, j, i] = src[o, index[j], i] (indexSelect) or, with kAdd,
// self[o, index[j], i] += src[o, j, i] (indexAdd_); all contiguous.
template <typename T, bool kAdd>
__global__ void indexKernel(int64_t outer, int64_t count, int64_t inner, int64_t dimSize,
                            const int64_t* index, const T* src, T* dst, int* bad) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < outer * count * inner;
       e += int64_t{blockDim.x} * gridDim.x) {
    const int64_t i = e % inner;
    const int64_t j = (e / inner) % count;
    const int64_t o = e / (inner * count);
    int64_t k = index[j];
    if (k < 0) k += dimSize;
    if (k < 0 || k >= dimSize) { *bad = 1; continue; }
    if constexpr (kAdd) {
      atomicAdd(dst + (o * dimSize + k) * inner + i, src[e]);
    } else {
      dst[e] = src[(o * dimSize + k) * inner + i];
    }
  }
}

void throwIfBad(const char* op, const Tensor& t, int* flag) {
  int bad = 0;
  check(cudaMemcpyAsync(&bad, flag, sizeof(int), cudaMemcpyDeviceToHost, detail::streamOf(t)),
        op, t.device().index);
  check(cudaStreamSynchronize(detail::streamOf(t)), op, t.device().index);
  cudaFreeAsync(flag, detail::streamOf(t));
  if (bad != 0) throw ValueError(std::string(op) + ": an index is out of bounds (cuda)");
}

int* newFlag(const Tensor& t) {
  int* flag = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void**>(&flag), sizeof(int), detail::streamOf(t)),
        "cudaMallocAsync", t.device().index);
  check(cudaMemsetAsync(flag, 0, sizeof(int), detail::streamOf(t)), "cudaMemset",
        t.device().index);
  return flag;
}

Red kindOf(const std::string& op) {
  if (op == "sum") return Red::kSum;
  if (op == "mean") return Red::kMean;
  if (op == "prod") return Red::kProd;
  if (op == "norm") return Red::kNorm;
  return op.find("max") != std::string::npos ? Red::kMax : Red::kMin;
}

// Outputs {values[, indices]}, inputs {x contiguous}, ints {outer, reduce, inner}.
void reduce(const KernelArgs& args) {
  const Tensor& x = args.inputs[0];
  const Tensor& out = args.outputs[0];
  const int64_t outer = args.ints[0], n = args.ints[1], inner = args.ints[2];
  int64_t* indices = args.outputs.size() > 1 ? args.outputs[1].data<int64_t>() : nullptr;
  const double p = args.scalars.empty() ? 0.0 : args.scalars[0];
  if (outer * inner == 0) return;
  detail::dispatchCuda(args.op, x, [&](auto inTag) {
    using T = decltype(inTag);
    detail::dispatchCuda(args.op, out, [&](auto outTag) {
      using O = decltype(outTag);
      // bool inputs accumulate in int64 (sum of a mask counts, max/min of
      // bools is any/all); only a non-bool input reduced into bool is no op.
      if constexpr (std::is_same_v<O, bool> && !std::is_same_v<T, bool>) {
        detail::unsupportedDtype(args.op, x);
      } else {
        reduceKernel<T, O><<<detail::blocksFor(outer * inner), detail::kThreads, 0,
                             detail::streamOf(out)>>>(kindOf(args.op), p, outer, n, inner,
                                                      static_cast<const T*>(x.rawData()),
                                                      static_cast<O*>(out.rawData()), indices);
      }
    });
  });
  detail::checkLaunch(args.op, out);
}

void softmax(const KernelArgs& args) {
  const Tensor& x = args.inputs[0];
  const Tensor& out = args.outputs[0];
  const int64_t outer = args.ints[0], n = args.ints[1], inner = args.ints[2];
  const bool log = std::string(args.op) == "logSoftmax";
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.rawData());
    T* py = static_cast<T*>(out.rawData());
    const unsigned blocks = detail::blocksFor(outer * inner);
    if (log) {
      softmaxKernel<T, true><<<blocks, detail::kThreads, 0, detail::streamOf(out)>>>(outer, n,
                                                                                   inner, px, py);
    } else {
      softmaxKernel<T, false><<<blocks, detail::kThreads, 0, detail::streamOf(out)>>>(
          outer, n, inner, px, py);
    }
  };
  if (x.dtype() == DType::kFloat32) launch(float{});
  else if (x.dtype() == DType::kFloat64) launch(double{});
  else detail::unsupportedDtype(args.op, x);
  detail::checkLaunch(args.op, out);
}

// indexSelect: outputs {out}, inputs {self, index}; indexAdd_: outputs {self},
// inputs {self, index, source}; ints {dim}.
template <bool kAdd>
void indexOp(const KernelArgs& args) {
  const Tensor& self = args.inputs[0];
  const Tensor index = args.inputs[1].to(DType::kInt64).contiguous();
  const int64_t dim = args.ints[0];
  if (kAdd && !self.isContiguous()) {
    throw Error("indexAdd_ on " + self.device().str() + " needs a contiguous self tensor");
  }
  const Tensor src = kAdd ? args.inputs[2].contiguous() : self.contiguous();
  const Tensor& dst = args.outputs[0];
  const Shape& shape = self.sizes();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < dim) outer *= shape[d];
    if (d > dim) inner *= shape[d];
  }
  const int64_t dimSize = shape.empty() ? 1 : shape[dim];
  const int64_t count = index.numel();
  if (outer * count * inner == 0) return;
  int* flag = newFlag(dst);
  detail::dispatchCuda(args.op, self, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool> || (kAdd && std::is_integral_v<T>)) {
      detail::unsupportedDtype(args.op, self);
    } else {
      indexKernel<T, kAdd><<<detail::blocksFor(outer * count * inner), detail::kThreads, 0,
                             detail::streamOf(dst)>>>(
          outer, count, inner, dimSize, index.data<int64_t>(),
          static_cast<const T*>(src.rawData()), static_cast<T*>(dst.rawData()), flag);
    }
  });
  detail::checkLaunch(args.op, dst);
  throwIfBad(args.op, dst, flag);
}

}  // namespace

void registerReduceKernels() {
  for (const char* op : {"sum", "mean", "prod", "norm", "max", "min", "amax", "amin", "argmax",
                         "argmin"}) {
    registerKernel(op, DeviceType::kCUDA, &reduce);
  }
  registerKernel("softmax", DeviceType::kCUDA, &softmax);
  registerKernel("logSoftmax", DeviceType::kCUDA, &softmax);
  registerKernel("indexSelect", DeviceType::kCUDA, &indexOp<false>);
  registerKernel("indexAdd_", DeviceType::kCUDA, &indexOp<true>);
}

}  // namespace distlab::cuda
