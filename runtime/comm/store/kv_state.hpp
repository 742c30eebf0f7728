#pragma once
// KvState: the single-threaded key-value semantics every store shares.
//
// HashStore wraps it in a mutex, FileStore replays its log into one per
// process, and the TCPStore server owns one on its event-loop thread, so the
// three agree on every corner of the Store contract (store.hpp) by
// construction. Not thread-safe; callers serialise access.
//
// Note [Counter encoding]: `add` keeps counters as decimal ASCII text (as c10d
// does), so `get` on a counter returns e.g. "7", and `set(k, "5")` followed by
// `add(k, 1)` gives 6. A value that is not a decimal integer makes `add` throw.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/comm/store/store.hpp"

namespace distlab::comm::detail {

class KvState {
 public:
  void set(const std::string& key, Bytes value) { map_[key] = std::move(value); }
  // nullptr when absent; the pointer is valid until the next mutation.
  const Bytes* find(const std::string& key) const;
  bool contains(const std::string& key) const { return map_.count(key) != 0; }
  bool containsAll(const std::vector<std::string>& keys) const;
  // Throws DistStoreError naming the key when its value is not an integer or
  // the sum would overflow int64 (the value is then unchanged).
  int64_t add(const std::string& key, int64_t delta);
  // c10d compare_set: sets `desired` when the current value equals `expected`,
  // or when the key is absent and `expected` is empty; returns `desired` then.
  // Otherwise returns the current value, or `expected` when the key is absent.
  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired);
  void append(const std::string& key, const Bytes& value);
  bool erase(const std::string& key) { return map_.erase(key) != 0; }
  int64_t size() const { return static_cast<int64_t>(map_.size()); }
  // The keys among `keys` that are absent, in order.
  std::vector<std::string> missing(const std::vector<std::string>& keys) const;

 private:
  std::unordered_map<std::string, Bytes> map_;
};

// Parses a counter value (Note [Counter encoding]); throws DistStoreError.
int64_t parseCounter(const std::string& key, const Bytes& value);
// current + delta; throws DistStoreError naming the key when it overflows.
int64_t addCounter(const std::string& key, int64_t current, int64_t delta);
Bytes encodeCounter(int64_t value);

// "store get timed out after 300000 ms waiting for key(s) [a, b]" — the one
// wording every store uses for a blocking call that ran out of time.
std::string timeoutMessage(const char* storeName, const char* op,
                           const std::vector<std::string>& keys, std::chrono::milliseconds timeout);

}  // namespace distlab::comm::detail
