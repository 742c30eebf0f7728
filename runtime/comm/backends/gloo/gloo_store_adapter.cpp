#include "runtime/comm/backends/gloo/gloo_store_adapter.hpp"

#include <fmt/format.h>

#include "runtime/core/errors.hpp"

namespace distlab::comm::gloo_backend {

GlooStoreAdapter::GlooStoreAdapter(std::shared_ptr<comm::Store> store, std::string prefix,
                                   std::chrono::milliseconds timeout)
    : store_(std::move(store)), prefix_(std::move(prefix)), timeout_(timeout) {}

std::vector<std::string> GlooStoreAdapter::prefixed(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(prefix_ + k);
  return out;
}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  store_->set(prefix_ + key, Bytes(data.begin(), data.end()));
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  // Wait with the group's timeout first: the store's own default may be longer.
  wait({key}, timeout_);
  Bytes value = store_->get(prefix_ + key);
  return std::vector<char>(value.begin(), value.end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& /*timeout*/) {
  // Gloo passes its own 30 s default on some paths; the group's timeout rules.
  store_->wait(prefixed(keys), timeout_);
}

}  // namespace distlab::comm::gloo_backend
