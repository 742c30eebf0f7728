#include "runtime/core/env.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/core/errors.hpp"

namespace distlab::env {
namespace {

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

}  // namespace

std::optional<std::string> getString(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::optional<int64_t> getInt(const char* name, int64_t min, int64_t max) {
  auto text = getString(name);
  if (!text) return std::nullopt;
  int64_t value = 0;
  const char* begin = text->data();
  const char* end = begin + text->size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || text->empty()) {
    throw ValueError(fmt::format("environment variable {}='{}' is not an integer; set it to an "
                                 "integer in [{}, {}]",
                                 name, *text, min, max));
  }
  if (value < min || value > max) {
    throw ValueError(fmt::format("environment variable {}={} is out of range; set it to an "
                                 "integer in [{}, {}]",
                                 name, value, min, max));
  }
  return value;
}

std::optional<bool> getBool(const char* name) {
  auto text = getString(name);
  if (!text) return std::nullopt;
  std::string v = upper(*text);
  if (v == "1" || v == "TRUE" || v == "YES" || v == "ON") return true;
  if (v == "0" || v == "FALSE" || v == "NO" || v == "OFF") return false;
  throw ValueError(fmt::format(
      "environment variable {}='{}' is not a boolean; use 1/0, true/false, yes/no or on/off",
      name, *text));
}

std::optional<std::string> getChoice(const char* name, const std::vector<std::string>& allowed) {
  auto text = getString(name);
  if (!text) return std::nullopt;
  std::string v = upper(*text);
  for (const auto& option : allowed) {
    if (upper(option) == v) return option;
  }
  throw ValueError(fmt::format("environment variable {}='{}' is invalid; allowed values: {}",
                               name, *text, fmt::join(allowed, ", ")));
}

int64_t requireInt(const char* name, int64_t min, int64_t max) {
  auto value = getInt(name, min, max);
  if (!value) {
    throw ValueError(fmt::format("environment variable {} is not set; set it to an integer in "
                                 "[{}, {}]",
                                 name, min, max));
  }
  return *value;
}

std::string requireString(const char* name) {
  auto value = getString(name);
  if (!value || value->empty()) {
    throw ValueError(fmt::format("environment variable {} is not set (or empty); set it", name));
  }
  return *value;
}

}  // namespace distlab::env
