// Device dispatch: allocators per device type, kernels per (operation,
// device), the not-implemented error, cross-device copies and to(device),
// the same-device rule, and DefaultDeviceGuard for factories.
#include <atomic>

#include "distlab/config.hpp"
#include "runtime/tensor/allocator.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "tests/tensor/test_util.hpp"

namespace distlab {
namespace {

using testing::f32;

TEST(DeviceDispatch, ParsesAndPrintsMeta) {
  EXPECT_EQ(parseDevice("meta"), Device::meta());
  EXPECT_EQ(Device::meta().str(), "meta");
  EXPECT_TRUE(Device::meta().isMeta());
  EXPECT_STREQ(deviceTypeName(DeviceType::kCUDA), "cuda");
  EXPECT_THROW_MSG(parseDevice("meta:1"), ValueError, "expected cpu, cuda, cuda:N or meta");
}

TEST(DeviceDispatch, AllocatorsPerDeviceType) {
  ASSERT_TRUE(hasAllocator(DeviceType::kCPU));
  ASSERT_TRUE(hasAllocator(DeviceType::kMeta));
  Allocation cpu = allocatorFor(Device::cpu()).allocate(100, Device::cpu());
  ASSERT_NE(cpu.data, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(cpu.data) % 64, 0u);
  cpu.deleter(cpu.data);
  Allocation meta = allocatorFor(Device::meta()).allocate(1 << 30, Device::meta());
  EXPECT_EQ(meta.data, nullptr);  // a GiB of meta costs nothing
  auto storage = Storage::allocate(1 << 30, Device::meta());
  EXPECT_EQ(storage->data(), nullptr);
  EXPECT_EQ(storage->nbytes(), 1u << 30);
#if !DISTLAB_HAVE_CUDA
  EXPECT_FALSE(hasAllocator(DeviceType::kCUDA));
  EXPECT_THROW_MSG(allocatorFor(Device::cuda(0)), Error,
                   "no allocator for device cuda:0: distlab was built without CUDA");
#endif
}

// A kernel that records its call, registered for relu on meta in one test.
std::atomic<int> reluCalls{0};
void countingRelu(const KernelArgs& args) {
  ++reluCalls;
  ASSERT_EQ(args.outputs.size(), 1u);
  ASSERT_EQ(args.inputs.size(), 1u);
  EXPECT_EQ(args.outputs[0].sizes(), (Shape{2, 3}));
  EXPECT_TRUE(args.inputs[0].device().isMeta());
}

TEST(DeviceDispatch, KernelIsLookedUpByTheTensorsDevice) {
  registerKernel("relu", DeviceType::kMeta, &countingRelu);
  reluCalls = 0;
  Tensor m = empty({2, 3}, TensorOptions{}.withDevice(Device::meta()));
  Tensor r = m.relu();
  EXPECT_EQ(reluCalls.load(), 1);
  EXPECT_TRUE(r.device().isMeta());
  f32({-1, 2}).relu();  // CPU tensors never reach the registry
  EXPECT_EQ(reluCalls.load(), 1);
  registerKernel("relu", DeviceType::kMeta, nullptr);  // back to the meta fallback
  m.relu();
  EXPECT_EQ(reluCalls.load(), 1);
}

TEST(DeviceDispatch, MissingKernelNamesOperationAndDevice) {
  if (findKernel("relu", DeviceType::kCUDA) == nullptr) {
    EXPECT_THROW_MSG(runKernel(Device::cuda(0), "relu", {}, {}), Error,
                     "relu is not implemented for device cuda:0");
  }
  EXPECT_EQ(findKernel("cholesky", DeviceType::kCPU), nullptr);
  EXPECT_THROW_MSG(runKernel(Device::cuda(1), "cholesky", {}, {}), Error,
                   "cholesky is not implemented for device cuda:1");
  EXPECT_NE(findKernel("cholesky", DeviceType::kMeta), nullptr);  // meta: shape-only fallback
}

TEST(DeviceDispatch, OperandsMustShareADevice) {
  Tensor cpu = f32({1, 2, 3});
  Tensor meta = empty({3}, TensorOptions{}.withDevice(Device::meta()));
  EXPECT_THROW_MSG(cpu.add(meta), Error,
                   "add: Expected all tensors to be on the same device, but found at least two "
                   "devices, cpu and meta!");
  EXPECT_THROW_MSG(meta.mul_(cpu), Error, "mul_: Expected all tensors");
  EXPECT_THROW_MSG(cat({cpu, meta}), Error, "cat: Expected all tensors");
  EXPECT_THROW_MSG(cpu.matmul(meta), Error, "matmul: Expected all tensors");
  // A 0-dim CPU tensor joins a tensor on another device (as in PyTorch).
  Tensor r = meta.add(scalarTensor(2.0));
  EXPECT_TRUE(r.device().isMeta());
  EXPECT_EQ(r.sizes(), (Shape{3}));
}

TEST(DeviceDispatch, ToDeviceAndCrossDeviceCopies) {
  Tensor cpu = f32({1, 2, 3, 4}, {2, 2});
  Tensor meta = cpu.to(Device::meta());
  EXPECT_TRUE(meta.device().isMeta());
  EXPECT_EQ(meta.sizes(), cpu.sizes());
  EXPECT_EQ(meta.dtype(), DType::kFloat32);
  EXPECT_TRUE(cpu.to(Device::cpu()).isSame(cpu));
  EXPECT_THROW_MSG(meta.to(Device::cpu()), Error,
                   "to: cannot move a meta tensor to cpu (it has no data); use toEmpty(cpu)");
  Tensor dst = zeros({2, 2});
  EXPECT_THROW_MSG(dst.copy_(meta), Error, "copy_: cannot copy out of a meta tensor into cpu");
  EXPECT_NO_THROW(meta.copy_(cpu));  // into meta: shapes only
  EXPECT_THROW_MSG(meta.copy_(zeros({3})), Error, "copy_: shapes [2, 2] and [3] cannot be broadcast");
  Tensor host = meta.toEmpty(Device::cpu());
  EXPECT_TRUE(host.device().isCpu());
  EXPECT_EQ(host.sizes(), (Shape{2, 2}));
  host.copy_(cpu);
  EXPECT_TRUE(host.equal(cpu));
}

TEST(DeviceDispatch, DefaultDeviceGuardRoutesFactories) {
  Generator gen(7);
  {
    DefaultDeviceGuard guard(Device::meta());
    EXPECT_TRUE(empty({2}).device().isMeta());
    EXPECT_TRUE(zeros({2}).device().isMeta());
    EXPECT_TRUE(ones({2}).device().isMeta());
    EXPECT_TRUE(arange(5).device().isMeta());
    EXPECT_TRUE(randn({1000}, gen).device().isMeta());
    EXPECT_TRUE(f32({1, 2}).device().isMeta());
    Tensor ex = zeros({2}, TensorOptions{}.withDevice(Device::meta()));
    EXPECT_TRUE(zerosLike(ex).device().isMeta());
    {
      DefaultDeviceGuard inner(Device::cpu());
      EXPECT_TRUE(empty({2}).device().isCpu());
    }
    EXPECT_TRUE(empty({2}).device().isMeta());
  }
  EXPECT_TRUE(empty({2}).device().isCpu());
  // Meta draws no random numbers: the generator is where a fresh one is.
  Generator fresh(7);
  EXPECT_EQ(gen.nextU64(), fresh.nextU64());
}

TEST(DeviceDispatch, MetaTensorsHaveNoValues) {
  Tensor m = empty({2, 3}, TensorOptions{}.withDevice(Device::meta()));
  EXPECT_THROW_MSG(m.sum().item<float>(), Error, "item: a tensor on device meta has no data");
  EXPECT_THROW_MSG(m.toVector<float>(), Error, "toVector: a tensor on device meta has no data");
  EXPECT_THROW_MSG(m.equal(m), Error, "equal: a tensor on device meta has no data");
  EXPECT_THROW_MSG(m.rawData(), Error, "rawData: a tensor on device meta");
  EXPECT_EQ(m.toString(), "tensor(..., device='meta', size=(2, 3))");
  EXPECT_EQ(empty({4}, TensorOptions{DType::kInt64, Device::meta()}).toString(),
            "tensor(..., device='meta', size=(4,), dtype=int64)");
}

}  // namespace
}  // namespace distlab
