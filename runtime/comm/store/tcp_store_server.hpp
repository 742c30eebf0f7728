#pragma once
// TCPStoreServer: the TCP store's server, one event-loop thread (poll) serving
// any number of clients. Runs inside a rank (TCPStore with isMaster) or on its
// own (the launcher hosts one for its ranks).
//
// Robustness: each client is isolated. A malformed, truncated or oversized
// frame, a client that disconnects mid-request, floods data, never reads its
// replies or stalls half-way through a frame is dropped with one ERROR line
// naming the peer and the reason (the cap, when one was exceeded); a request
// whose reply cannot be sent (larger than the frame limit) gets an error reply
// and the client stays. The server never crashes, spins or blocks on one
// client's behalf. Blocking requests park their client (Note [Parked waiters])
// instead of blocking the loop. Memory is bounded by the caps below
// (Note [Buffer caps]); at the process's file-descriptor limit the server
// stops accepting for a while instead of spinning (Note [Accept back-off]).
//
// Thread-safety: the constructor binds and starts the loop; port() and the
// counters may be read from any thread; the destructor stops the loop and
// closes every connection (clients then see a closed connection).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "runtime/comm/store/socket.hpp"
#include "runtime/comm/store/tcp_store_protocol.hpp"

namespace distlab::comm {

// Note [Buffer caps]: the server holds, per client, the bytes received but not
// yet handled (input) and the replies not yet taken by the client (output).
// A well-behaved client (TCPStore) has at most one request and one reply in
// flight, so each buffer needs room for one largest frame; anything beyond is
// a client that pipelines without reading, and it is dropped. The total across
// clients is capped too: the client whose bytes would pass it is dropped. A
// client that stops sending half-way through a frame holds its input until
// partialFrameTimeout passes without a byte, then it is dropped. Before the
// handshake a client may send only kMaxHandshakeInputBytes.
struct TCPStoreServerOptions {
  // One largest frame (detail::kMaxFrameBytes, 64 MiB) plus its length and a
  // read's worth of slack.
  static constexpr size_t kDefaultMaxClientInputBytes =
      size_t{detail::kMaxFrameBytes} + 4 + (64u << 10);
  static constexpr size_t kDefaultMaxClientOutputBytes = kDefaultMaxClientInputBytes;
  static constexpr size_t kDefaultMaxTotalBufferedBytes = size_t{1} << 30;  // 1 GiB
  static constexpr std::chrono::milliseconds kDefaultPartialFrameTimeout{30000};
  // A hello frame is 14 bytes; nothing larger is needed before it is answered.
  static constexpr size_t kMaxHandshakeInputBytes = 4096;

  int port = 0;  // 0 picks an ephemeral port (see port())
  // IPv4 address to listen on: "127.0.0.1" (this machine only) or "0.0.0.0"
  // (every interface); see storeBindAddress() (Note [Store bind address]).
  std::string bindAddress = "127.0.0.1";
  size_t maxClientInputBytes = kDefaultMaxClientInputBytes;
  size_t maxClientOutputBytes = kDefaultMaxClientOutputBytes;
  size_t maxTotalBufferedBytes = kDefaultMaxTotalBufferedBytes;
  std::chrono::milliseconds partialFrameTimeout = kDefaultPartialFrameTimeout;
  // How long accepting pauses after accept() failed for lack of resources
  // (Note [Accept back-off]).
  std::chrono::milliseconds acceptRetryInterval{100};
};

// Note [Store bind address]: a server whose clients are all told to connect
// to a loopback name ("127.0.0.1", "localhost", "::1") listens on 127.0.0.1
// only, so a single-node run is not reachable from the network. Any other
// host (an interface address, a host name, even one that resolves to a
// loopback alias such as Debian's 127.0.1.1) listens on every interface, as
// PyTorch's TCPStore does: the address other nodes use may not be one this
// machine can bind (NAT, DNS aliases), and the hosting node's own processes
// may connect through 127.0.0.1.
std::string storeBindAddress(const std::string& host);

class TCPStoreServer {
 public:
  // Binds 127.0.0.1:`port` (0 picks an ephemeral port). Throws
  // DistNetworkError when the port cannot be bound.
  explicit TCPStoreServer(int port);
  // Throws ValueError for a bad bindAddress, port or cap (0), and
  // DistNetworkError when the address cannot be bound.
  explicit TCPStoreServer(TCPStoreServerOptions options);
  ~TCPStoreServer();
  TCPStoreServer(const TCPStoreServer&) = delete;
  TCPStoreServer& operator=(const TCPStoreServer&) = delete;

  int port() const { return port_; }
  const TCPStoreServerOptions& options() const { return options_; }
  // Clients dropped because of bad input, a cap, or a broken connection
  // mid-request.
  int64_t droppedClients() const { return dropped_.load(); }
  int64_t connectedClients() const { return connected_.load(); }
  // Bytes held in client input and output buffers now, and the most ever
  // held at once (Note [Buffer caps]).
  int64_t bufferedBytes() const { return buffered_.load(); }
  int64_t peakBufferedBytes() const { return peakBuffered_.load(); }
  // Times accepting was paused because accept() ran out of resources.
  int64_t acceptPauses() const { return acceptPauses_.load(); }
  // Blocking requests parked now (Note [Parked waiters]).
  int64_t waitingRequests() const { return waiting_.load(); }
  // CPU time the event-loop thread has used so far.
  std::chrono::nanoseconds loopCpuTime() const;

 private:
  class Loop;
  friend class Loop;

  TCPStoreServerOptions options_;
  int port_ = 0;
  std::atomic<int64_t> dropped_{0};
  std::atomic<int64_t> connected_{0};
  std::atomic<int64_t> buffered_{0};
  std::atomic<int64_t> peakBuffered_{0};
  std::atomic<int64_t> acceptPauses_{0};
  std::atomic<int64_t> waiting_{0};
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  std::thread::native_handle_type threadHandle_{};
};

}  // namespace distlab::comm
