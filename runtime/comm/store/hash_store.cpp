#include "runtime/comm/store/hash_store.hpp"

#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {

void HashStore::set(const std::string& key, const Bytes& value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state_.set(key, value);
  }
  changed_.notify_all();
}

void HashStore::waitLocked(std::unique_lock<std::mutex>& lock,
                           const std::vector<std::string>& keys,
                           std::chrono::milliseconds timeout, const char* op) {
  Deadline deadline = Deadline::after(timeout);
  while (!state_.containsAll(keys)) {
    if (changed_.wait_until(lock, deadline.at()) == std::cv_status::timeout &&
        !state_.containsAll(keys)) {
      throw DistStoreError(detail::timeoutMessage("HashStore", op, state_.missing(keys), timeout));
    }
  }
}

Bytes HashStore::get(const std::string& key) {
  std::unique_lock<std::mutex> lock(mutex_);
  waitLocked(lock, {key}, timeout(), "get");
  return *state_.find(key);
}

int64_t HashStore::add(const std::string& key, int64_t delta) {
  int64_t value = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    value = state_.add(key, delta);
  }
  changed_.notify_all();
  return value;
}

Bytes HashStore::compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Bytes out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    out = state_.compareSet(key, expected, desired);
  }
  changed_.notify_all();
  return out;
}

void HashStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  waitLocked(lock, keys, resolve(timeout), "wait");
}

bool HashStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_.containsAll(keys);
}

bool HashStore::deleteKey(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_.erase(key);
}

int64_t HashStore::numKeys() {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_.size();
}

void HashStore::append(const std::string& key, const Bytes& value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state_.append(key, value);
  }
  changed_.notify_all();
}

std::vector<Bytes> HashStore::multiGet(const std::vector<std::string>& keys) {
  std::unique_lock<std::mutex> lock(mutex_);
  waitLocked(lock, keys, timeout(), "multiGet");
  std::vector<Bytes> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(*state_.find(key));
  return out;
}

void HashStore::multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  if (keys.size() != values.size()) {
    throw ValueError("HashStore multiSet: " + std::to_string(keys.size()) + " keys but " +
                     std::to_string(values.size()) + " values; pass one value per key");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < keys.size(); ++i) state_.set(keys[i], values[i]);
  }
  changed_.notify_all();
}

}  // namespace distlab::comm
