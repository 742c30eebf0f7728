#include <cstdint>

#include "distlab/config.hpp"
#include "runtime/tensor/allocator.hpp"
#if DISTLAB_HAVE_CUDA
#include "runtime/tensor/cuda/cuda_runtime.hpp"
#endif
#include "runtime/tensor/storage.hpp"
#include "tests/tensor/test_util.hpp"

namespace distlab {
namespace {

TEST(Storage, AllocatesAligned) {
  auto s = Storage::allocate(100, Device::cpu());
  EXPECT_EQ(s->nbytes(), 100u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data()) % 64, 0u);
  EXPECT_TRUE(s->device().isCpu());
  auto empty = Storage::allocate(0, Device::cpu());
  EXPECT_NE(empty->data(), nullptr);
}

TEST(Storage, CudaAllocationThrowsNamingDevice) {
  EXPECT_THROW_MSG(Storage::allocate(16, Device::cuda(1)), Error, "cuda:1");
}

TEST(Storage, WrapRunsDeleterOnce) {
  int calls = 0;
  float buffer[4] = {1, 2, 3, 4};
  {
    auto s = Storage::wrap(buffer, sizeof(buffer), Device::cpu(), [&](void* p) {
      EXPECT_EQ(p, buffer);
      ++calls;
    });
    auto copy = s;
    EXPECT_EQ(s->data(), buffer);
  }
  EXPECT_EQ(calls, 1);
}

TEST(Storage, ViewsShareAndKeepStorageAlive) {
  std::weak_ptr<Storage> weak;
  Tensor view;
  {
    Tensor t = arange(6, {DType::kFloat32}).view({2, 3});
    weak = t.storage();
    view = t.select(0, 1);
    EXPECT_TRUE(view.sharesStorageWith(t));
  }
  EXPECT_FALSE(weak.expired());
  EXPECT_EQ(view.toVector<float>(), (std::vector<float>{3, 4, 5}));
  view = Tensor();
  EXPECT_TRUE(weak.expired());
}

TEST(Device, StrAndParse) {
  EXPECT_EQ(Device::cpu().str(), "cpu");
  EXPECT_EQ(Device::cuda(3).str(), "cuda:3");
  EXPECT_EQ(parseDevice("cuda"), Device::cuda(0));
  EXPECT_EQ(parseDevice("cuda:2"), Device::cuda(2));
  EXPECT_EQ(parseDevice("cpu"), Device::cpu());
  EXPECT_THROW_MSG(parseDevice("tpu"), ValueError, "unknown device 'tpu'");
  EXPECT_THROW_MSG(parseDevice("cuda:x"), ValueError, "cuda:x");
}

TEST(Device, OperationsOnUnbackedCudaTensorsThrowNamingTheDevice) {
  // Without CUDA built, or without a CUDA device, every path ends in an Error
  // naming cuda:0: no allocator, no device, or no kernel. (With a device the
  // null storage would reach a kernel: tests/gpu covers real CUDA tensors.)
  auto s = Storage::wrap(nullptr, 64, Device::cuda(0), nullptr);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = s;
  impl->sizes = {4};
  impl->strides = {1};
  Tensor t(impl);
  EXPECT_EQ(t.device(), Device::cuda(0));
#if DISTLAB_HAVE_CUDA
  if (cuda::isAvailable()) GTEST_SKIP() << "a CUDA device is present; tests/gpu runs on it";
  EXPECT_THROW_MSG(empty({2}, TensorOptions{}.withDevice(Device::cuda(0))), Error,
                   "cuda:0 is not available (no CUDA device");
#else
  EXPECT_THROW_MSG(t.to(Device::cpu()), Error, "copy_ is not implemented for device cuda:0");
  EXPECT_THROW_MSG(empty({2}, TensorOptions{}.withDevice(Device::cuda(0))), Error,
                   "no allocator for device cuda:0: distlab was built without CUDA");
#endif
  EXPECT_THROW_MSG(t.add(1), Error, "cuda:0");
  EXPECT_THROW_MSG(t.sum(), Error, "cuda:0");
}

}  // namespace
}  // namespace distlab
