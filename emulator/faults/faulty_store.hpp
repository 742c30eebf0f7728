#pragma once
// FaultyStore: the Store decorator of fault injection (store_death,
// slow_store). Every call first sleeps the plan's store delay (slow_store),
// then, once the plan says the store server died (store_death fired), throws
// DistNetworkError as a client of a vanished TCPStore server would ("...
// connection refused"), naming the operation and key. Otherwise forwards.
// Thread-safe when the inner store is.
#include <memory>

#include "emulator/faults/fault_plan.hpp"
#include "runtime/comm/store/store.hpp"

namespace distlab::emulator {

class FaultyStore : public comm::Store {
 public:
  FaultyStore(std::shared_ptr<comm::Store> inner, std::shared_ptr<FaultPlan> plan);

  void set(const std::string& key, const comm::Bytes& value) override;
  comm::Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  comm::Bytes compareSet(const std::string& key, const comm::Bytes& expected,
                         const comm::Bytes& desired) override;
  void wait(const std::vector<std::string>& keys,
            std::chrono::milliseconds timeout = kUseDefaultTimeout) override;
  bool check(const std::vector<std::string>& keys) override;
  bool deleteKey(const std::string& key) override;
  int64_t numKeys() override;
  void append(const std::string& key, const comm::Bytes& value) override;
  std::vector<comm::Bytes> multiGet(const std::vector<std::string>& keys) override;
  void multiSet(const std::vector<std::string>& keys,
                const std::vector<comm::Bytes>& values) override;

 private:
  void before(const char* op, const std::string& key);

  std::shared_ptr<comm::Store> inner_;
  std::shared_ptr<FaultPlan> plan_;
  std::atomic<bool> deathLogged_{false};
};

}  // namespace distlab::emulator
