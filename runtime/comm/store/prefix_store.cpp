#include "runtime/comm/store/prefix_store.hpp"

#include "runtime/core/errors.hpp"

namespace distlab::comm {

// Note: get/multiGet use this view's timeout (which starts as the underlying
// store's) by passing it through wait() before reading.
PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : Store(store ? store->timeout() : kDefaultTimeout),
      prefix_(std::move(prefix)),
      store_(std::move(store)) {
  if (!store_) throw ValueError("PrefixStore '" + prefix_ + "': the underlying store is null");
}

std::vector<std::string> PrefixStore::join(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(join(key));
  return out;
}

void PrefixStore::set(const std::string& key, const Bytes& value) { store_->set(join(key), value); }

Bytes PrefixStore::get(const std::string& key) {
  store_->wait({join(key)}, timeout());
  return store_->get(join(key));
}

int64_t PrefixStore::add(const std::string& key, int64_t delta) {
  return store_->add(join(key), delta);
}

Bytes PrefixStore::compareSet(const std::string& key, const Bytes& expected,
                              const Bytes& desired) {
  return store_->compareSet(join(key), expected, desired);
}

void PrefixStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  store_->wait(join(keys), resolve(timeout));
}

bool PrefixStore::check(const std::vector<std::string>& keys) { return store_->check(join(keys)); }

bool PrefixStore::deleteKey(const std::string& key) { return store_->deleteKey(join(key)); }

int64_t PrefixStore::numKeys() { return store_->numKeys(); }

void PrefixStore::append(const std::string& key, const Bytes& value) {
  store_->append(join(key), value);
}

std::vector<Bytes> PrefixStore::multiGet(const std::vector<std::string>& keys) {
  std::vector<std::string> full = join(keys);
  store_->wait(full, timeout());
  return store_->multiGet(full);
}

void PrefixStore::multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  store_->multiSet(join(keys), values);
}

}  // namespace distlab::comm
