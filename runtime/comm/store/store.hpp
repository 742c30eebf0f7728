#pragma once
// Store: the small key-value service ranks rendezvous through (PyTorch c10d
// Store; semantics in docs/pytorch-semantics.md, "Stores").
//
// Values are byte strings. Blocking calls (`get`, `wait`) block until every
// key exists or the timeout passes, then throw DistStoreError naming the
// key(s) and the timeout. A timeout of kUseDefaultTimeout means the store's
// default (settable, 300 s unless the constructor says otherwise).
// All implementations are thread-safe: one Store object may be used from
// several threads at once.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace distlab::comm {

using Bytes = std::vector<uint8_t>;

class Store {
 public:
  static constexpr std::chrono::milliseconds kDefaultTimeout{300000};
  static constexpr std::chrono::milliseconds kUseDefaultTimeout{-1};

  explicit Store(std::chrono::milliseconds timeout = kDefaultTimeout)
      : timeout_(timeout.count()) {}
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  // Blocks until `key` exists (default timeout), then returns its value.
  virtual Bytes get(const std::string& key) = 0;
  // Adds `delta` to the integer stored at `key` (absent = 0) and returns the
  // new value. Throws DistStoreError if the key holds a non-integer value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Sets `key` to `desired` if its current value equals `expected` (or, when
  // the key is absent, if `expected` is empty). Returns the value after the
  // call (PyTorch's compare_set contract).
  virtual Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) = 0;
  // Blocks until every key exists; kUseDefaultTimeout uses the default timeout.
  virtual void wait(const std::vector<std::string>& keys,
                    std::chrono::milliseconds timeout = kUseDefaultTimeout) = 0;
  // True when every key exists (never blocks).
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Removes `key`; returns whether it existed. FileStore throws DistStoreError
  // (as PyTorch's FileStore does).
  virtual bool deleteKey(const std::string& key) = 0;
  // Number of keys a user can get(). Unlike c10d, internal bookkeeping (worker
  // counts, file-user counts) is never stored under a key, so after one set()
  // this is 1, not 2.
  virtual int64_t numKeys() = 0;
  // Appends to the value at `key` (creating it).
  virtual void append(const std::string& key, const Bytes& value) = 0;
  // get/set of several keys at once (multiGet blocks like get, with the
  // default timeout). multiSet throws ValueError when the sizes differ.
  virtual std::vector<Bytes> multiGet(const std::vector<std::string>& keys) = 0;
  virtual void multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) = 0;

  // The default timeout of get/wait/multiGet (and of connecting, for TCPStore).
  // Safe to change while other threads use the store.
  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(timeout_.load(std::memory_order_relaxed));
  }
  void setTimeout(std::chrono::milliseconds timeout) {
    timeout_.store(timeout.count(), std::memory_order_relaxed);
  }

  // Convenience for text values.
  void setString(const std::string& key, const std::string& value) {
    set(key, Bytes(value.begin(), value.end()));
  }
  std::string getString(const std::string& key) {
    Bytes v = get(key);
    return std::string(v.begin(), v.end());
  }

 protected:
  std::chrono::milliseconds resolve(std::chrono::milliseconds timeout) const {
    return timeout == kUseDefaultTimeout ? this->timeout() : timeout;
  }

 private:
  std::atomic<int64_t> timeout_;
};

}  // namespace distlab::comm
