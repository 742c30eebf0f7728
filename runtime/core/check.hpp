#pragma once
// The one check-macro family (docs/DESIGN.md, "Errors").
//
//   DL_CHECK(cond, msg...)          throws distlab::Error
//   DL_CHECK_EQ/NE/LT/LE/GT/GE(a, b, msg...)
//                                   throws distlab::Error naming both values
//   DL_CHECK_T(ExcType, cond, msg...) same, with a chosen exception type
//                                   (ValueError for bad arguments, ...)
//
// Every message carries file:line, the failed condition and the streamed
// message parts, e.g.
//   "runtime/tensor/tensor.cpp:88: view: shape [2, 3] is invalid for input of
//    size 5 (check failed: numel == n; 6 vs 5)".
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/core/errors.hpp"

namespace distlab::detail {

// Streams every argument into one string; an empty pack gives "".
template <typename... Args>
std::string concat(Args&&... args) {
  if constexpr (sizeof...(Args) == 0) {
    return {};
  } else {
    std::ostringstream out;
    (out << ... << std::forward<Args>(args));
    return out.str();
  }
}

std::string checkMessage(const char* file, int line, std::string_view condition,
                         const std::string& message, const std::string& values);

template <typename A, typename B>
std::string checkValues(const A& a, const B& b) {
  return concat(a, " vs ", b);
}

}  // namespace distlab::detail

#define DL_CHECK_T(ExcType, cond, ...)                                             \
  do {                                                                             \
    if (!(cond)) [[unlikely]] {                                                    \
      throw ExcType(::distlab::detail::checkMessage(                               \
          __FILE__, __LINE__, #cond, ::distlab::detail::concat(__VA_ARGS__), "")); \
    }                                                                              \
  } while (0)

#define DL_CHECK(cond, ...) DL_CHECK_T(::distlab::Error, cond, __VA_ARGS__)

#define DL_CHECK_OP_T(ExcType, op, a, b, ...)                                          \
  do {                                                                                 \
    const auto& dl_check_a_ = (a);                                                     \
    const auto& dl_check_b_ = (b);                                                     \
    if (!(dl_check_a_ op dl_check_b_)) [[unlikely]] {                                  \
      throw ExcType(::distlab::detail::checkMessage(                                   \
          __FILE__, __LINE__, #a " " #op " " #b, ::distlab::detail::concat(__VA_ARGS__), \
          ::distlab::detail::checkValues(dl_check_a_, dl_check_b_)));                  \
    }                                                                                  \
  } while (0)

#define DL_CHECK_EQ(a, b, ...) DL_CHECK_OP_T(::distlab::Error, ==, a, b, __VA_ARGS__)
#define DL_CHECK_NE(a, b, ...) DL_CHECK_OP_T(::distlab::Error, !=, a, b, __VA_ARGS__)
#define DL_CHECK_LT(a, b, ...) DL_CHECK_OP_T(::distlab::Error, <, a, b, __VA_ARGS__)
#define DL_CHECK_LE(a, b, ...) DL_CHECK_OP_T(::distlab::Error, <=, a, b, __VA_ARGS__)
#define DL_CHECK_GT(a, b, ...) DL_CHECK_OP_T(::distlab::Error, >, a, b, __VA_ARGS__)
#define DL_CHECK_GE(a, b, ...) DL_CHECK_OP_T(::distlab::Error, >=, a, b, __VA_ARGS__)
