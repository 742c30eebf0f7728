#pragma once
// Test helpers for the TCP store server: a raw connection that speaks
// whatever bytes a test gives it, and waits with deadlines (no sleeps used
// for synchronisation: each helper waits on the event itself).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <thread>

#include "runtime/comm/store/socket.hpp"
#include "runtime/comm/store/tcp_store.hpp"
#include "runtime/comm/store/tcp_store_protocol.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm::testing {

using std::chrono::milliseconds;

class RawClient {
 public:
  explicit RawClient(int port)
      : sock_(detail::connectTcp("127.0.0.1", port, Deadline::after(milliseconds(5000)))) {}
  int fd() const { return sock_.fd(); }
  void send(const std::string& bytes) {
    ASSERT_TRUE(detail::sendAll(sock_.fd(), bytes.data(), bytes.size(),
                                Deadline::after(milliseconds(5000))));
  }
  // False when the server dropped us (or the send did not finish in time).
  bool trySend(const std::string& bytes, milliseconds within = milliseconds(5000)) {
    try {
      return detail::sendAll(sock_.fd(), bytes.data(), bytes.size(), Deadline::after(within));
    } catch (const DistNetworkError&) {
      return false;
    }
  }
  void hello() {
    detail::Encoder e;
    e.u8(static_cast<uint8_t>(detail::Op::kHello)).u32(detail::kMagic).u32(detail::kVersion).u8(0);
    send(e.frame());
    std::string reply = readReply();
    ASSERT_EQ(reply, std::string(1, '\0')) << "hello must be answered ok";
  }
  // One reply payload (status byte first); throws DistError when none comes.
  std::string readReply(milliseconds within = milliseconds(5000)) {
    Deadline deadline = Deadline::after(within);
    char head[4];
    if (!detail::recvExact(sock_.fd(), head, 4, deadline)) throw DistStoreError("no reply");
    uint32_t len = detail::Decoder(head, 4).u32();
    std::string payload(len, '\0');
    if (!detail::recvExact(sock_.fd(), payload.data(), len, deadline)) {
      throw DistStoreError("truncated reply");
    }
    return payload;
  }
  // True when the server closed this connection within the deadline
  // (replies that arrive first are skipped).
  bool closedByServer(milliseconds within = milliseconds(5000)) {
    Deadline deadline = Deadline::after(within);
    char buf[65536];
    while (!deadline.expired()) {
      pollfd p{sock_.fd(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(deadline.remaining().count())) <= 0) return false;
      ssize_t n = ::recv(sock_.fd(), buf, sizeof(buf), 0);
      if (n <= 0) return true;
    }
    return false;
  }
  void close() { sock_.reset(); }

 private:
  detail::Socket sock_;
};

inline std::string frameOf(const std::string& payload) {
  detail::Encoder head;
  head.u32(static_cast<uint32_t>(payload.size()));
  return head.payload() + payload;
}

// The header of a frame of `len` bytes (the payload is up to the caller).
inline std::string frameHeader(uint32_t len) { return detail::Encoder().u32(len).payload(); }

// The server still answers a well-behaved client correctly.
inline void expectServing(int port) {
  TCPStore store(TCPStoreOptions{.host = "127.0.0.1", .port = port, .timeout = milliseconds(5000)});
  int64_t before = store.add("alive", 1);
  EXPECT_EQ(store.add("alive", 1), before + 1);
  store.setString("k", "v");
  EXPECT_EQ(store.getString("k"), "v");
}

// Polls `done` until it holds or `within` passes; true when it held.
template <typename Pred>
bool waitUntil(Pred done, milliseconds within = milliseconds(5000)) {
  Deadline deadline = Deadline::after(within);
  while (!done()) {
    if (deadline.expired()) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

}  // namespace distlab::comm::testing
