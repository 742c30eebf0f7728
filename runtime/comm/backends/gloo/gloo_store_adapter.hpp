#pragma once
// GlooStoreAdapter: presents a distlab Store to Gloo's rendezvous code
// (gloo::rendezvous::Store) under a key prefix, so every group (and every
// Gloo context of a group) rendezvous in its own key space of one shared store.
//
// Blocking: get() and wait() wait at most `timeout` (the group's timeout), then
// throw DistStoreError naming the missing keys; a failing store surfaces as the
// store's own DistStoreError/DistNetworkError. Thread-safe as the store is.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "runtime/comm/store/store.hpp"

namespace distlab::comm::gloo_backend {

class GlooStoreAdapter : public ::gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(std::shared_ptr<comm::Store> store, std::string prefix,
                   std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  const std::string& prefix() const { return prefix_; }

 private:
  std::vector<std::string> prefixed(const std::vector<std::string>& keys) const;

  std::shared_ptr<comm::Store> store_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

}  // namespace distlab::comm::gloo_backend
