#pragma once
// Every GPU test derives from CudaTest: without a CUDA device it is skipped
// with the reason ("no CUDA device: <driver text>"), which is also what
// tests/gpu/CMakeLists.txt matches to report the test as skipped.
#include <gtest/gtest.h>

#include "runtime/tensor/cuda/cuda_runtime.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::gputest {

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::isAvailable()) GTEST_SKIP() << cuda::unavailableReason();
  }
  static TensorOptions onGpu(DType dtype = DType::kFloat32) {
    return TensorOptions{dtype, Device::cuda(0)};
  }
};

}  // namespace distlab::gputest
