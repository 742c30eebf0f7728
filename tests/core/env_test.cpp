#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "runtime/core/env.hpp"
#include "runtime/core/errors.hpp"

namespace distlab {
namespace {

// Sets a variable for the scope of one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old, had_ = true;
    if (value) ::setenv(name, value, 1); else ::unsetenv(name);
  }
  ~ScopedEnv() { had_ ? ::setenv(name_, old_.c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(Env, IntParsesAndValidates) {
  ScopedEnv unset("DISTLAB_TEST_INT", nullptr);
  EXPECT_FALSE(env::getInt("DISTLAB_TEST_INT", 0, 10).has_value());
  {
    ScopedEnv v("DISTLAB_TEST_INT", "7");
    EXPECT_EQ(env::getInt("DISTLAB_TEST_INT", 0, 10), 7);
  }
  {
    ScopedEnv v("DISTLAB_TEST_INT", "7x");
    try {
      env::getInt("DISTLAB_TEST_INT", 0, 10);
      FAIL();
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("DISTLAB_TEST_INT='7x' is not an integer"),
                std::string::npos) << e.what();
    }
  }
  {
    ScopedEnv v("DISTLAB_TEST_INT", "11");
    EXPECT_THROW(env::getInt("DISTLAB_TEST_INT", 0, 10), ValueError);
  }
}

TEST(Env, RequireNamesTheVariable) {
  ScopedEnv unset("DISTLAB_TEST_REQ", nullptr);
  try {
    env::requireInt("DISTLAB_TEST_REQ", 0, 3);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("DISTLAB_TEST_REQ is not set"), std::string::npos);
  }
}

TEST(Env, BoolAndChoice) {
  ScopedEnv b("DISTLAB_TEST_BOOL", "Yes");
  EXPECT_EQ(env::getBool("DISTLAB_TEST_BOOL"), true);
  ScopedEnv c("DISTLAB_TEST_CHOICE", "detail");
  EXPECT_EQ(env::getChoice("DISTLAB_TEST_CHOICE", {"OFF", "INFO", "DETAIL"}), "DETAIL");
  ScopedEnv bad("DISTLAB_TEST_BOOL2", "maybe");
  EXPECT_THROW(env::getBool("DISTLAB_TEST_BOOL2"), ValueError);
}

}  // namespace
}  // namespace distlab
