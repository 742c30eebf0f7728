// Factory functions: empty/zeros/ones/full, ranges, random tensors, fromVector.
//
// Note [Factories on devices]
// The device comes from the options, or from a DefaultDeviceGuard when the
// options ask for the CPU (factoryDevice). Values that are computed element by
// element (ranges, random numbers, fromVector) are produced on the host and
// copied to the device, so a seed gives the same numbers on every device; on
// meta nothing is computed and no random number is drawn (as in PyTorch).
#include <cmath>

#include "runtime/core/check.hpp"
#include "runtime/tensor/detail/convert.hpp"
#include "runtime/tensor/detail/tensor_util.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requiresGrad) t.setRequiresGrad(true);
  return t;
}

// A new contiguous tensor whose values `fill(cpuTensor)` writes on the host
// (Note [Factories on devices]).
template <typename Fill>
Tensor hostFilled(const Shape& shape, const TensorOptions& options, Fill&& fill) {
  const Device device = factoryDevice(options.device);
  if (device.isMeta()) return detail::makeEmpty(shape, options.dtype, device);
  Tensor out = detail::makeEmpty(shape, options.dtype, Device::cpu());
  fill(out);
  return out.to(device);
}

// Fills a new contiguous tensor element by element from `next()` (double).
template <typename Next>
Tensor generate(const Shape& shape, const TensorOptions& options, Next&& next) {
  return hostFilled(shape, options, [&](Tensor& out) {
    dispatchDType(options.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* p = static_cast<T*>(out.rawData());
      const int64_t n = out.numel();
      for (int64_t i = 0; i < n; ++i) p[i] = detail::castTo<T>(next());
    });
  });
}

Tensor emptyOn(const Shape& shape, const TensorOptions& options) {
  return detail::makeEmpty(shape, options.dtype, factoryDevice(options.device));
}

void checkFloatingFactory(const char* op, DType dtype) {
  if (!isFloatingPoint(dtype)) {
    throw ValueError(detail::concat(op, ": expects a floating point dtype, got ",
                                    dtypeName(dtype)));
  }
}

}  // namespace

Tensor empty(const Shape& shape, TensorOptions options) {
  return finish(emptyOn(shape, options), options);
}

Tensor zeros(const Shape& shape, TensorOptions options) {
  Tensor t = emptyOn(shape, options);
  t.zero_();
  return finish(t, options);
}

Tensor ones(const Shape& shape, TensorOptions options) { return full(shape, 1, options); }

Tensor full(const Shape& shape, Scalar value, TensorOptions options) {
  Tensor t = emptyOn(shape, options);
  t.fill_(value);
  return finish(t, options);
}

// The *Like factories keep `like`'s device, also under a DefaultDeviceGuard.
Tensor emptyLike(const Tensor& like) {
  return detail::makeEmpty(like.sizes(), like.dtype(), like.device());
}
Tensor zerosLike(const Tensor& like) {
  Tensor t = emptyLike(like);
  t.zero_();
  return t;
}
Tensor onesLike(const Tensor& like) {
  Tensor t = emptyLike(like);
  t.fill_(1);
  return t;
}

Tensor arange(int64_t end, TensorOptions options) {
  if (end < 0) throw ValueError(detail::concat("arange: end (", end, ") must be >= 0"));
  int64_t i = 0;
  return finish(generate({end}, options, [&] { return static_cast<double>(i++); }), options);
}

Tensor arange(double start, double end, double step, TensorOptions options) {
  if (step == 0.0 || !std::isfinite(start) || !std::isfinite(end) ||
      (step > 0 && end < start) || (step < 0 && end > start)) {
    throw ValueError(detail::concat("arange: invalid range start=", start, " end=", end,
                                    " step=", step,
                                    " (step must be nonzero and point from start to end)"));
  }
  const auto n = static_cast<int64_t>(std::ceil((end - start) / step));
  int64_t i = 0;
  return finish(generate({n}, options, [&] { return start + step * static_cast<double>(i++); }),
                options);
}

Tensor rand(const Shape& shape, Generator& gen, TensorOptions options) {
  return uniform(shape, 0.0, 1.0, gen, options);
}

Tensor randn(const Shape& shape, Generator& gen, TensorOptions options) {
  checkFloatingFactory("randn", options.dtype);
  return finish(generate(shape, options, [&] { return gen.normal(); }), options);
}

Tensor uniform(const Shape& shape, double low, double high, Generator& gen,
               TensorOptions options) {
  checkFloatingFactory("uniform", options.dtype);
  if (!(low <= high)) {
    throw ValueError(detail::concat("uniform: expects low <= high, got low=", low,
                                    " high=", high));
  }
  // float32 and the half types draw 24 random bits so the result stays below
  // `high` after rounding to the element type (for [0, 1)); float64 uses 53.
  const bool wide = options.dtype == DType::kFloat64;
  const double span = high - low;
  return finish(generate(shape, options,
                         [&] {
                           const double u =
                               wide ? gen.uniform()
                                    : static_cast<double>(gen.nextU64() >> 40) * 0x1.0p-24;
                           return low + span * u;
                         }),
                options);
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen,
               TensorOptions options) {
  if (low >= high) {
    throw ValueError(detail::concat("randint: expects low < high, got low=", low,
                                    " high=", high));
  }
  Tensor out = hostFilled(shape, options, [&](Tensor& host) {
    dispatchDType(options.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* p = static_cast<T*>(host.rawData());
      const int64_t n = host.numel();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = gen.randint(low, high);
        if constexpr (std::is_integral_v<T>) {
          p[i] = static_cast<T>(v);
        } else {
          p[i] = detail::castTo<T>(static_cast<double>(v));
        }
      }
    });
  });
  return finish(out, options);
}

template <typename T>
Tensor fromVector(const std::vector<T>& values, const Shape& shape, TensorOptions options) {
  const Shape sizes = shape.empty() ? Shape{static_cast<int64_t>(values.size())} : shape;
  if (shapeNumel(sizes) != static_cast<int64_t>(values.size())) {
    throw ValueError(detail::concat("fromVector: shape ", shapeToString(sizes), " needs ",
                                    shapeNumel(sizes), " values but ", values.size(),
                                    " were given"));
  }
  Tensor out = hostFilled(sizes, options, [&](Tensor& host) {
    dispatchDType(options.dtype, [&](auto tag) {
      using O = decltype(tag);
      O* p = static_cast<O*>(host.rawData());
      for (size_t i = 0; i < values.size(); ++i) {
        p[i] = detail::castTo<O>(static_cast<T>(values[i]));
      }
    });
  });
  return finish(out, options);
}

template Tensor fromVector<float>(const std::vector<float>&, const Shape&, TensorOptions);
template Tensor fromVector<double>(const std::vector<double>&, const Shape&, TensorOptions);
template Tensor fromVector<Half>(const std::vector<Half>&, const Shape&, TensorOptions);
template Tensor fromVector<BFloat16>(const std::vector<BFloat16>&, const Shape&, TensorOptions);
template Tensor fromVector<int8_t>(const std::vector<int8_t>&, const Shape&, TensorOptions);
template Tensor fromVector<uint8_t>(const std::vector<uint8_t>&, const Shape&, TensorOptions);
template Tensor fromVector<int32_t>(const std::vector<int32_t>&, const Shape&, TensorOptions);
template Tensor fromVector<int64_t>(const std::vector<int64_t>&, const Shape&, TensorOptions);
template Tensor fromVector<bool>(const std::vector<bool>&, const Shape&, TensorOptions);

Tensor scalarTensor(Scalar value, TensorOptions options) {
  return full({}, value, options);
}

}  // namespace distlab
