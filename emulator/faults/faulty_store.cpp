#include "emulator/faults/faulty_store.hpp"

#include <fmt/format.h>

#include <thread>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {

FaultyStore::FaultyStore(std::shared_ptr<comm::Store> inner, std::shared_ptr<FaultPlan> plan)
    : Store(inner->timeout()), inner_(std::move(inner)), plan_(std::move(plan)) {}

void FaultyStore::before(const char* op, const std::string& key) {
  auto delay = plan_->storeDelay();
  if (delay.count() > 0) std::this_thread::sleep_for(delay);
  if (plan_->storeDead()) {
    if (!deathLogged_.exchange(true)) plan_->log().write("store_dead_seen");
    throw DistNetworkError(fmt::format(
        "store: {} '{}' failed: the store server is gone (connection refused; injected "
        "store_death)", op, key));
  }
}

void FaultyStore::set(const std::string& key, const comm::Bytes& value) {
  before("set", key);
  inner_->set(key, value);
}
comm::Bytes FaultyStore::get(const std::string& key) {
  before("get", key);
  return inner_->get(key);
}
int64_t FaultyStore::add(const std::string& key, int64_t delta) {
  before("add", key);
  return inner_->add(key, delta);
}
comm::Bytes FaultyStore::compareSet(const std::string& key, const comm::Bytes& expected,
                                    const comm::Bytes& desired) {
  before("compare_set", key);
  return inner_->compareSet(key, expected, desired);
}
void FaultyStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  before("wait", keys.empty() ? "" : keys.front());
  inner_->wait(keys, timeout == kUseDefaultTimeout ? this->timeout() : timeout);
}
bool FaultyStore::check(const std::vector<std::string>& keys) {
  before("check", keys.empty() ? "" : keys.front());
  return inner_->check(keys);
}
bool FaultyStore::deleteKey(const std::string& key) {
  before("delete_key", key);
  return inner_->deleteKey(key);
}
int64_t FaultyStore::numKeys() {
  before("num_keys", "");
  return inner_->numKeys();
}
void FaultyStore::append(const std::string& key, const comm::Bytes& value) {
  before("append", key);
  inner_->append(key, value);
}
std::vector<comm::Bytes> FaultyStore::multiGet(const std::vector<std::string>& keys) {
  before("multi_get", keys.empty() ? "" : keys.front());
  return inner_->multiGet(keys);
}
void FaultyStore::multiSet(const std::vector<std::string>& keys,
                           const std::vector<comm::Bytes>& values) {
  before("multi_set", keys.empty() ? "" : keys.front());
  inner_->multiSet(keys, values);
}

}  // namespace distlab::emulator
