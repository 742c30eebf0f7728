#pragma once
// Whether a CUDA device can be used, asked in a forked child process so that
// the calling process never initialises CUDA: a CUDA context does not survive
// fork(), and the multi-process suites fork their ranks from the test process.
#include <gtest/gtest.h>

#include <string>

namespace distlab::gputest {

// Empty when a CUDA device works; else the reason, starting "no CUDA device"
// (what tests/gpu/CMakeLists.txt matches to report a skip). Asked once, cached.
std::string cudaUnavailableReasonInChild();

// The fixture of multi-process GPU tests: skipped with that reason.
class ForkedCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = cudaUnavailableReasonInChild();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

}  // namespace distlab::gputest
