#include "runtime/comm/backend_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {

uint64_t parseOptionUInt(const std::string& key, const std::string& value, uint64_t lo,
                         uint64_t hi) {
  // from_chars, not stoull: stoull takes "-1" (as 2^64-1), " 12" and "12abc".
  uint64_t parsed = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || parsed < lo ||
      parsed > hi) {
    throw ValueError(fmt::format("backend option {}='{}': give a whole number in [{}, {}]", key,
                                 value, lo, hi));
  }
  return parsed;
}

bool parseOptionFlag(const std::string& key, const std::string& value) {
  if (value == "1" || value == "true") return true;
  if (value == "0" || value == "false") return false;
  throw ValueError(
      fmt::format("backend option {}='{}': give 1/0 or true/false", key, value));
}

size_t parseOptionChoice(const std::string& key, const std::string& value,
                         const std::vector<std::string>& choices) {
  const auto it = std::find(choices.begin(), choices.end(), value);
  if (it == choices.end()) {
    throw ValueError(fmt::format("backend option {}='{}': give one of {}", key, value,
                                 fmt::join(choices, ", ")));
  }
  return static_cast<size_t>(it - choices.begin());
}

std::vector<std::string> knownBackendOptionKeys() {
  std::vector<std::string> keys;
  for (const std::string& name : registeredBackends()) {
    for (const BackendOptionSpec& spec : lookupBackend(name).options) keys.push_back(spec.key);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

void validateBackendOptions(const BackendOptionMap& options) {
  for (const auto& [key, value] : options) {
    const size_t dot = key.find('.');
    const std::string backend = dot == std::string::npos ? "" : key.substr(0, dot);
    const BackendOptionSpec* found = nullptr;
    if (!backend.empty() && isBackendRegistered(backend)) {
      for (const BackendOptionSpec& spec : lookupBackend(backend).options) {
        if (spec.key == key) found = &spec;
      }
    }
    if (!backend.empty() && !isBackendRegistered(backend)) {
      throw ValueError(fmt::format("backend option '{}': this build has no backend '{}' "
                                   "(registered: {})",
                                   key, backend, fmt::join(registeredBackends(), ", ")));
    }
    if (found == nullptr) {
      throw ValueError(fmt::format("backend option '{}' is not known; known keys: {}", key,
                                   fmt::join(knownBackendOptionKeys(), ", ")));
    }
    found->check(value);
  }
}

}  // namespace distlab::comm
