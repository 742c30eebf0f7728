// PhiloxGenerator fills (Note [Philox on CPU and GPU]): the host loop here,
// the CUDA kernel in cuda/cuda_philox.cu, the arithmetic in philox_math.hpp.
// Built with -ffp-contract=off (CMakeLists.txt): no fused multiply-add other
// than the explicit fmaf calls, as the device build.
#include "runtime/tensor/philox.hpp"

#include <fmt/format.h>

#include "distlab/config.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/tensor/philox_math.hpp"
#if DISTLAB_HAVE_CUDA
#include "runtime/tensor/cuda/cuda_kernels.hpp"
#endif

namespace distlab {
namespace {

Tensor fill(const Shape& shape, PhiloxGenerator& gen, TensorOptions options, bool normal,
            const char* what) {
  if (options.dtype != DType::kFloat32) {
    throw ValueError(fmt::format("{}: only float32 is supported, not {}", what,
                                 dtypeName(options.dtype)));
  }
  Tensor out = empty(shape, options);
  const uint64_t seed = gen.seed(), offset = gen.takeOffset();
  const auto n = static_cast<uint64_t>(out.numel());
  if (options.device.isCuda()) {
#if DISTLAB_HAVE_CUDA
    cuda::philoxFill(static_cast<float*>(out.rawData()), n, seed, offset, normal, options.device.index);
    return out;
#endif
  }
  if (!options.device.isCpu()) {
    throw ValueError(fmt::format("{} is not implemented for device {}", what,
                                 options.device.str()));
  }
  float* p = out.data<float>();
  for (uint64_t i = 0; i < n; ++i) {
    p[i] = normal ? philox::normalAt(seed, offset, i) : philox::uniformAt(seed, offset, i);
  }
  return out;
}

}  // namespace

Tensor randPhilox(const Shape& shape, PhiloxGenerator& gen, TensorOptions options) {
  return fill(shape, gen, options, false, "randPhilox");
}

Tensor randnPhilox(const Shape& shape, PhiloxGenerator& gen, TensorOptions options) {
  return fill(shape, gen, options, true, "randnPhilox");
}

void philox::philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  const Block b = philox4x32_10(Block{{ctr[0], ctr[1], ctr[2], ctr[3]}}, key[0], key[1]);
  for (int i = 0; i < 4; ++i) out[i] = b.v[i];
}

}  // namespace distlab
