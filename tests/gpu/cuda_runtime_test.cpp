// The CUDA runtime pieces: caching allocator statistics, pinned memory,
// streams, events and cross-stream waits.
#include <chrono>

#include "runtime/tensor/allocator.hpp"
#include "runtime/tensor/cuda/cuda_allocator.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace distlab::gputest {
namespace {

using CudaRuntime = CudaTest;

TEST_F(CudaRuntime, CachingAllocatorReusesBlocksAndCountsBytes) {
  cuda::emptyCache();
  const AllocatorStats before = cuda::memoryStats(0);
  {
    Tensor a = empty({1 << 20}, onGpu());  // 4 MiB
    const AllocatorStats live = cuda::memoryStats(0);
    EXPECT_EQ(live.allocatedBytes - before.allocatedBytes, 4 << 20);
    EXPECT_GE(live.reservedBytes, live.allocatedBytes);
    EXPECT_GE(live.peakAllocatedBytes, live.allocatedBytes);
  }
  const AllocatorStats freed = cuda::memoryStats(0);
  EXPECT_EQ(freed.allocatedBytes, before.allocatedBytes);
  EXPECT_EQ(freed.reservedBytes - before.reservedBytes, 4 << 20);  // cached, not returned
  Tensor b = empty({1 << 20}, onGpu());
  EXPECT_EQ(cuda::memoryStats(0).numDeviceMallocs, freed.numDeviceMallocs);  // reused
  b = Tensor();
  cuda::emptyCache();
  const AllocatorStats emptied = cuda::memoryStats(0);
  EXPECT_EQ(emptied.reservedBytes, emptied.allocatedBytes);  // only live blocks stay
}

TEST_F(CudaRuntime, PinnedHostMemoryRoundTrips) {
  Tensor pinned = cuda::pinnedEmpty({256}, DType::kFloat32);
  EXPECT_TRUE(pinned.device().isCpu());
  pinned.copy_(arange(0.0, 256.0, 1.0));
  Tensor back = pinned.to(Device::cuda(0)).mul(2.0).to(Device::cpu());
  EXPECT_TRUE(back.equal(arange(0.0, 512.0, 2.0)));
}

TEST_F(CudaRuntime, EventsOrderWorkAcrossStreams) {
  const cuda::Stream side = cuda::streamFromPool(0);
  Tensor x = full({1 << 16}, 1.0, onGpu());
  cuda::Event produced;
  {
    cuda::StreamGuard guard(side);
    x.mul_(3.0);
    produced.record(side);
  }
  produced.block(cuda::currentStream(0));  // the current stream waits, the host does not
  Tensor y = x.add(1.0);
  EXPECT_TRUE(produced.synchronize(std::chrono::seconds(10)));
  EXPECT_TRUE(produced.query());
  EXPECT_EQ(y.sum().item<double>(), 4.0 * (1 << 16));
  EXPECT_EQ(cuda::currentStream(0).handle(), nullptr);  // the guard restored the default
}

}  // namespace
}  // namespace distlab::gputest
