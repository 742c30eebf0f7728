#include "runtime/comm/store/kv_state.hpp"

#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/core/errors.hpp"

namespace distlab::comm::detail {

const Bytes* KvState::find(const std::string& key) const {
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : &it->second;
}

bool KvState::containsAll(const std::vector<std::string>& keys) const {
  for (const auto& key : keys) {
    if (!contains(key)) return false;
  }
  return true;
}

std::vector<std::string> KvState::missing(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  for (const auto& key : keys) {
    if (!contains(key)) out.push_back(key);
  }
  return out;
}

int64_t KvState::add(const std::string& key, int64_t delta) {
  auto it = map_.find(key);
  int64_t value = addCounter(key, it == map_.end() ? 0 : parseCounter(key, it->second), delta);
  map_[key] = encodeCounter(value);
  return value;
}

Bytes KvState::compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) {
  auto it = map_.find(key);
  if ((it == map_.end() && expected.empty()) || (it != map_.end() && it->second == expected)) {
    map_[key] = desired;
    return desired;
  }
  return it == map_.end() ? expected : it->second;
}

void KvState::append(const std::string& key, const Bytes& value) {
  Bytes& slot = map_[key];
  slot.insert(slot.end(), value.begin(), value.end());
}

int64_t parseCounter(const std::string& key, const Bytes& value) {
  const char* begin = reinterpret_cast<const char*>(value.data());
  const char* end = begin + value.size();
  int64_t out = 0;
  auto [ptr, ec] = std::from_chars(begin, end, out);
  if (value.empty() || ec != std::errc() || ptr != end) {
    std::string shown(begin, std::min<size_t>(value.size(), 32));
    throw DistStoreError(fmt::format(
        "store add: key '{}' holds a value that is not an integer counter ('{}'{}); add() "
        "only works on keys created by add() or set to a decimal integer",
        key, shown, value.size() > 32 ? "..." : ""));
  }
  return out;
}

int64_t addCounter(const std::string& key, int64_t current, int64_t delta) {
  int64_t value = 0;
  if (__builtin_add_overflow(current, delta, &value)) {
    throw DistStoreError(fmt::format(
        "store add: adding {} to key '{}' (value {}) would overflow a 64-bit signed counter; "
        "the value is left unchanged", delta, key, current));
  }
  return value;
}

Bytes encodeCounter(int64_t value) {
  std::string text = std::to_string(value);
  return Bytes(text.begin(), text.end());
}

std::string timeoutMessage(const char* storeName, const char* op,
                           const std::vector<std::string>& keys,
                           std::chrono::milliseconds timeout) {
  return fmt::format("{} {}: timed out after {} ms waiting for key(s) [{}]", storeName, op,
                     timeout.count(), fmt::join(keys, ", "));
}

}  // namespace distlab::comm::detail
