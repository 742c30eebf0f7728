#pragma once
// Thin POSIX TCP helpers for the TCP store (and anything else that needs a
// plain socket): RAII descriptor, listen on a port (0 = ephemeral), connect
// with retries until a deadline, exact send/receive bounded by a deadline.
// Errors throw DistNetworkError naming the peer and the operation; running
// out of time throws DistStoreError from the caller's context (the helpers
// return false so the caller can name the key it was waiting for).
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/core/clock.hpp"

namespace distlab::comm::detail {

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();

 private:
  int fd_ = -1;
};

// Binds `address`:`port` (an IPv4 literal such as "127.0.0.1" or "0.0.0.0";
// SO_REUSEADDR), listens, and reports the bound port (the ephemeral one when
// `port` is 0). The socket is non-blocking. Throws ValueError for a bad
// address or port, DistNetworkError when binding fails.
Socket listenTcp(int port, const std::string& address, int* boundPort);

// Connects to host:port, retrying refused/unreachable attempts with backoff
// until `deadline`; every resolved address is tried. TCP_NODELAY is set.
// Throws DistNetworkError naming host:port and the last error on expiry.
Socket connectTcp(const std::string& host, int port, const Deadline& deadline);
// Connect rounds that failed and were retried, in this process (for tests and
// stats: a test waits on it to know a client is retrying).
int64_t connectRetries();

// Sends all of [data, data+size); false when the deadline passed. Throws
// DistNetworkError when the peer is gone.
bool sendAll(int fd, const void* data, size_t size, const Deadline& deadline);
// Receives exactly `size` bytes; false when the deadline passed. Throws
// DistNetworkError when the peer closed the connection or on error.
bool recvExact(int fd, void* data, size_t size, const Deadline& deadline);

void setNonBlocking(int fd);

}  // namespace distlab::comm::detail
