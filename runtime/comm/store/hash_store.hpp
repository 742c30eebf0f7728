#pragma once
// HashStore: an in-process, thread-safe Store (PyTorch HashStore). Shared by
// threads of one process, never across processes. Blocking calls wait on a
// condition variable with a deadline and throw DistStoreError naming the keys
// and the timeout when it passes.
#include <condition_variable>
#include <mutex>

#include "runtime/comm/store/kv_state.hpp"
#include "runtime/comm/store/store.hpp"

namespace distlab::comm {

class HashStore : public Store {
 public:
  explicit HashStore(std::chrono::milliseconds timeout = kDefaultTimeout) : Store(timeout) {}

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys,
            std::chrono::milliseconds timeout = kUseDefaultTimeout) override;
  bool check(const std::vector<std::string>& keys) override;
  bool deleteKey(const std::string& key) override;
  int64_t numKeys() override;
  void append(const std::string& key, const Bytes& value) override;
  std::vector<Bytes> multiGet(const std::vector<std::string>& keys) override;
  void multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;

 private:
  // Waits (lock held) until every key exists; throws on timeout.
  void waitLocked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                  std::chrono::milliseconds timeout, const char* op);

  std::mutex mutex_;
  std::condition_variable changed_;
  detail::KvState state_;
};

}  // namespace distlab::comm
