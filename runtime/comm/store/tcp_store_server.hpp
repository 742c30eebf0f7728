#pragma once
// TCPStoreServer: the TCP store's server, one event-loop thread (poll) serving
// any number of clients. Runs inside a rank (TCPStore with isMaster) or on its
// own (the launcher hosts one for its ranks).
//
// Robustness: each client is isolated. A malformed, truncated or oversized
// frame, a client that disconnects mid-request, or one that floods data while
// parked is dropped with an ERROR log line naming the peer and the reason; the
// server never crashes or blocks on one client's behalf. Blocking requests
// park their client (Note [Parked waiters]) instead of blocking the loop.
//
// Thread-safety: the constructor binds and starts the loop; port() and the
// counters may be read from any thread; the destructor stops the loop and
// closes every connection (clients then see a closed connection).
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "runtime/comm/store/socket.hpp"

namespace distlab::comm {

class TCPStoreServer {
 public:
  // Binds 0.0.0.0:`port` (0 picks an ephemeral port; see port()). Throws
  // DistNetworkError when the port cannot be bound.
  explicit TCPStoreServer(int port);
  ~TCPStoreServer();
  TCPStoreServer(const TCPStoreServer&) = delete;
  TCPStoreServer& operator=(const TCPStoreServer&) = delete;

  int port() const { return port_; }
  // Clients dropped because of bad input or a broken connection mid-request.
  int64_t droppedClients() const { return dropped_.load(); }
  int64_t connectedClients() const { return connected_.load(); }

 private:
  class Loop;

  int port_ = 0;
  std::atomic<int64_t> dropped_{0};
  std::atomic<int64_t> connected_{0};
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace distlab::comm
