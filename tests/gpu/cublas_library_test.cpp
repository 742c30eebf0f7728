// cuBLAS is opened on first use (Note [cuBLAS loaded on first use]): a
// process that only computes on CPU never maps it. Needs no GPU: opening the
// library and looking up its entry points touch no device.
#include "runtime/tensor/cuda/cublas_library.hpp"

#include <gtest/gtest.h>

#include "runtime/tensor/tensor.hpp"

namespace distlab {
namespace {

TEST(CublasLibrary, OpenedOnFirstUseOnly) {
  // A CPU matmul registers every built-in device (CUDA's included) and runs.
  const Tensor product = ones({4, 8}).matmul(ones({8, 2}));
  EXPECT_EQ(product.sum().item<float>(), 64.0f) << "8 elements, each a sum of 8 ones";
  EXPECT_FALSE(cuda::cublasLoaded()) << "a CPU-only process mapped cuBLAS";

  const cuda::CublasLibrary& lib = cuda::cublas();
  EXPECT_TRUE(cuda::cublasLoaded());
  EXPECT_NE(lib.create, nullptr);
  EXPECT_NE(lib.setStream, nullptr);
  EXPECT_NE(lib.sgemmStridedBatched, nullptr);
  EXPECT_NE(lib.dgemmStridedBatched, nullptr);
  EXPECT_EQ(&cuda::cublas(), &lib) << "opened once";
}

}  // namespace
}  // namespace distlab
