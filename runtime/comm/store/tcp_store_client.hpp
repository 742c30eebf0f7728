#pragma once
// One client connection to a TCPStoreServer (Note [TCP store protocol]).
// Not thread-safe: TCPStore keeps a pool of these and gives each caller its
// own, so a thread blocked in get() never holds up another thread's set().
#include <string>

#include "runtime/comm/store/socket.hpp"
#include "runtime/comm/store/tcp_store_protocol.hpp"

namespace distlab::comm::detail {

class TCPStoreConnection {
 public:
  // Connects (retrying until `deadline`, as the server may start later) and
  // performs the hello handshake. `countsAsWorker` makes this connection count
  // toward the server's worker total (one per TCPStore object).
  TCPStoreConnection(const std::string& host, int port, bool countsAsWorker,
                     const Deadline& deadline);

  // Sends `request` and returns the reply payload, status byte first. Throws
  // DistNetworkError when the connection breaks, DistStoreError when no reply
  // arrives by `deadline`; either leaves the connection broken().
  std::string roundTrip(const Encoder& request, const Deadline& deadline);
  bool broken() const { return broken_; }

 private:
  Socket sock_;
  bool broken_ = false;
};

}  // namespace distlab::comm::detail
