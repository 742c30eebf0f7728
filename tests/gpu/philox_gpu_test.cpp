// PhiloxGenerator on a CUDA device gives bitwise the CPU's float32 values for
// the same seed and offset (Note [Philox on CPU and GPU]), uniform and normal,
// for several shapes, seeds and offsets. Skipped without a CUDA device.
#include <cstring>

#include "runtime/tensor/philox.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace distlab::gputest {
namespace {

using PhiloxGpu = CudaTest;

void expectBitwiseEqual(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  const std::vector<float> a = cpu.toVector<float>();
  const std::vector<float> b = gpu.to(Device::cpu()).toVector<float>();
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
      << what << ": CPU and GPU values differ";
}

TEST_F(PhiloxGpu, SameBitsOnCpuAndGpu) {
  for (uint64_t seed : {0ull, 1234ull, 0xdeadbeefcafeull}) {
    for (const Shape& shape : {Shape{1}, Shape{7}, Shape{1000, 3}, Shape{1 << 20}}) {
      for (uint64_t offset : {0ull, 5ull, 1ull << 33}) {
        PhiloxGenerator genCpu(seed), genGpu(seed);
        genCpu.setOffset(offset);
        genGpu.setOffset(offset);
        const std::string what = "seed " + std::to_string(seed) + " offset " +
                                 std::to_string(offset) + " numel " +
                                 std::to_string(shapeNumel(shape));
        expectBitwiseEqual(randPhilox(shape, genCpu), randPhilox(shape, genGpu, onGpu()),
                           "uniform " + what);
        expectBitwiseEqual(randnPhilox(shape, genCpu), randnPhilox(shape, genGpu, onGpu()),
                           "normal " + what);
        EXPECT_EQ(genCpu.offset(), genGpu.offset());
      }
    }
  }
}

}  // namespace
}  // namespace distlab::gputest
