#include <gtest/gtest.h>

#include <string>

#include "runtime/core/debug_level.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab {
namespace {

TEST(Logging, MatrixOfCppLevelAndDebugLevel) {
  setDebugLevel(DebugLevel::kOff);
  setCppLogLevel(LogLevel::kError);
  EXPECT_EQ(logLevel(), LogLevel::kError);
  setCppLogLevel(LogLevel::kWarning);
  setDebugLevel(DebugLevel::kDetail);  // ignored unless the C++ level is INFO
  EXPECT_EQ(logLevel(), LogLevel::kWarning);
  setCppLogLevel(LogLevel::kInfo);
  setDebugLevel(DebugLevel::kOff);
  EXPECT_EQ(logLevel(), LogLevel::kInfo);
  setDebugLevel(DebugLevel::kInfo);
  EXPECT_EQ(logLevel(), LogLevel::kDebug);
  setDebugLevel(DebugLevel::kDetail);
  EXPECT_EQ(logLevel(), LogLevel::kTrace);
  setDebugLevel(DebugLevel::kOff);
  setCppLogLevel(LogLevel::kWarning);
}

TEST(Logging, ParseRejectsUnknownLevelNamingTheSource) {
  EXPECT_EQ(parseLogLevel("info", "x"), LogLevel::kInfo);
  try {
    parseLogLevel("LOUD", "environment variable TORCH_CPP_LOG_LEVEL");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("TORCH_CPP_LOG_LEVEL='LOUD' is invalid"),
              std::string::npos);
  }
}

TEST(Logging, DebugLevelParse) {
  EXPECT_EQ(parseDebugLevel("Detail", "x"), DebugLevel::kDetail);
  EXPECT_THROW(parseDebugLevel("VERBOSE", "TORCH_DISTRIBUTED_DEBUG"), ValueError);
}

TEST(Logging, LineCarriesRank) {
  setLogRank(3);
  ::testing::internal::CaptureStderr();
  DL_LOG(ERROR, "hello {}", 42);
  std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("rank 3 logging_test.cpp:"), std::string::npos) << out;
  EXPECT_NE(out.find("hello 42"), std::string::npos) << out;
  setLogRank(-1);
}

}  // namespace
}  // namespace distlab
