#pragma once
// TCPStore: a Store served over TCP (PyTorch TCPStore). One process hosts the
// server (isMaster, or a standalone TCPStoreServer such as the launcher's);
// every TCPStore object is a client of it.
//
//   TCPStore store({.host = "127.0.0.1", .port = 0, .isMaster = true,
//                   .worldSize = 1});          // single process, ephemeral port
//   int port = store.port();
//
// Construction: the master binds `port` (0 = ephemeral, reported by port())
// on 127.0.0.1 when `host` is a loopback name, on every interface otherwise
// (Note [Store bind address]), and starts the server thread. Every object then connects, retrying until
// `timeout` (a client may start before the server). With worldSize > 0 and
// waitForWorkers, the master's constructor blocks until worldSize TCPStore
// objects (itself included) have connected, or throws DistStoreError naming
// how many joined. worldSize counts clients + 1 for the master (PyTorch).
//
// Blocking calls carry their timeout to the server, which parks them; a lost
// connection throws DistNetworkError naming host:port and the operation.
// Thread-safe: each call borrows a pooled connection, so concurrent blocking
// and non-blocking calls from several threads do not wait on each other.
// Destroying the master stops the server; clients then fail with
// DistNetworkError. So the hosting rank must outlive its peers' last request:
// end with the peers acknowledging a final key ("bye/<rank>") that the master
// waits for; a plain counter barrier is not enough, as the master may pass it
// while a peer's last wait() is still in flight.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/comm/store/store.hpp"
#include "runtime/comm/store/tcp_store_client.hpp"
#include "runtime/comm/store/tcp_store_server.hpp"

namespace distlab::comm {

struct TCPStoreOptions {
  std::string host = "127.0.0.1";  // the server's address (clients connect here)
  int port = 29500;                // 0 with isMaster: pick a free port
  bool isMaster = false;           // host the server in this object
  int worldSize = -1;              // clients + 1 for the master; -1 = not fixed
  bool waitForWorkers = true;      // master waits for worldSize objects (fixed size only)
  std::chrono::milliseconds timeout = Store::kDefaultTimeout;
};

class TCPStore : public Store {
 public:
  // Throws ValueError for bad options, DistNetworkError when the port cannot
  // be bound or the server cannot be reached in time, DistStoreError when the
  // workers do not all join in time.
  explicit TCPStore(TCPStoreOptions options);
  ~TCPStore() override;

  const std::string& host() const { return options_.host; }
  int port() const { return port_; }
  bool isMaster() const { return server_ != nullptr; }
  int worldSize() const { return options_.worldSize; }

  // Blocks until worldSize TCPStore objects have connected to the server.
  void waitForWorkers(std::chrono::milliseconds timeout = kUseDefaultTimeout);

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
  using Connection = detail::TCPStoreConnection;
  // Sends `request` on a pooled connection and returns the reply after its
  // status byte; `serverWait` is how long the server may legitimately take.
  // Turns error/timeout replies and broken connections into exceptions that
  // name this store, `op` and `keys`.
  std::string call(const detail::Encoder& request, std::chrono::milliseconds serverWait,
                   const char* op, const std::vector<std::string>& keys);
  std::unique_ptr<Connection> acquire();
  void release(std::unique_ptr<Connection> connection);
  std::string name() const;

  TCPStoreOptions options_;
  int port_ = 0;
  std::unique_ptr<TCPStoreServer> server_;  // destroyed after the connections
  std::mutex poolMutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace distlab::comm
