#pragma once
// Helpers for the tensor tests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/tensor.hpp"

// Expects `stmt` to throw `Exc` whose what() contains `substring`.
#define EXPECT_THROW_MSG(stmt, Exc, substring)                                    \
  EXPECT_THROW(                                                                   \
      {                                                                           \
        try {                                                                     \
          stmt;                                                                   \
        } catch (const Exc& thrown_) {                                                  \
          EXPECT_THAT(std::string(thrown_.what()), ::testing::HasSubstr(substring));    \
          throw;                                                                  \
        }                                                                         \
      },                                                                          \
      Exc)

namespace distlab::testing {

inline Tensor f32(const std::vector<float>& v, const Shape& shape = {}) {
  return fromVector<float>(v, shape);
}
inline Tensor f64(const std::vector<double>& v, const Shape& shape = {}) {
  return fromVector<double>(v, shape);
}
inline Tensor i64(const std::vector<int64_t>& v, const Shape& shape = {}) {
  return fromVector<int64_t>(v, shape);
}

}  // namespace distlab::testing
