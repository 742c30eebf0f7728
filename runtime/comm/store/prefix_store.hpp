#pragma once
// PrefixStore: a view of another store with `prefix + "/"` prepended to every
// key (PyTorch PrefixStore), so several users (process groups, restart rounds)
// share one store without key collisions. Thread-safe when the underlying
// store is; shares ownership of it. Error messages name the full key.
//
// numKeys() forwards to the underlying store and so counts every key in it,
// not only those under the prefix (as in PyTorch).
#include <memory>

#include "runtime/comm/store/store.hpp"

namespace distlab::comm {

class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store);

  const std::string& prefix() const { return prefix_; }
  const std::shared_ptr<Store>& underlyingStore() const { return store_; }

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
  std::string join(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> join(const std::vector<std::string>& keys) const;

  std::string prefix_;
  std::shared_ptr<Store> store_;
};

}  // namespace distlab::comm
