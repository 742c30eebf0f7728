#include <gtest/gtest.h>

#include <string>

#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab {
namespace {

TEST(Errors, HierarchyMatchesPyTorch) {
  EXPECT_THROW(throw DistBackendError("x"), DistError);
  EXPECT_THROW(throw DistNetworkError("x"), DistError);
  EXPECT_THROW(throw DistStoreError("x"), DistError);
  EXPECT_THROW(throw DistTimeoutError("x"), DistBackendError);
  EXPECT_THROW(throw DistPeerFailureError("x"), DistNetworkError);
  EXPECT_THROW(throw DistError("x"), Error);
  EXPECT_THROW(throw ValueError("x"), Error);
  EXPECT_THROW(throw Error("x"), std::runtime_error);
}

TEST(Check, MessageHasFileLineConditionAndMessage) {
  try {
    int size = 3;
    DL_CHECK(size == 4, "tensor has size ", size);
    FAIL() << "no throw";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("errors_test.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("tensor has size 3"), std::string::npos) << what;
    EXPECT_NE(what.find("check failed: size == 4"), std::string::npos) << what;
  }
}

TEST(Check, ComparisonNamesBothValues) {
  try {
    DL_CHECK_EQ(2 + 2, 5, "arithmetic");
    FAIL() << "no throw";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("4 vs 5"), std::string::npos) << what;
    EXPECT_NE(what.find("arithmetic"), std::string::npos) << what;
  }
}

TEST(Check, TypedVariantThrowsChosenType) {
  EXPECT_THROW(DL_CHECK_T(ValueError, false, "bad"), ValueError);
  EXPECT_THROW([] { DL_CHECK_OP_T(DistStoreError, <, 3, 2, "x"); }(), DistStoreError);
  EXPECT_NO_THROW(DL_CHECK_LT(1, 2));
  EXPECT_NO_THROW(DL_CHECK_GE(2, 2));
}

}  // namespace
}  // namespace distlab
