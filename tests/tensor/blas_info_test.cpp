// BLAS kernel-family reporting (Note [OpenBLAS kernel family]).
#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/tensor/blas_info.hpp"

namespace distlab {
namespace {

TEST(BlasInfo, NamesTheLibraryAndKernelFamily) {
  BlasInfo b = blasInfo();
  EXPECT_NE(b.config.find("OpenBLAS"), std::string::npos) << b.config;
  EXPECT_FALSE(b.coreName.empty());
  const std::string line = blasSummary();
  EXPECT_NE(line.find("kernel family " + b.coreName), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
  if (!b.fasterCore.empty()) {
    EXPECT_NE(line.find("OPENBLAS_CORETYPE=" + b.fasterCore), std::string::npos) << line;
    EXPECT_NE(b.fasterCore, b.coreName);
  }
}

}  // namespace
}  // namespace distlab
