#include "runtime/comm/store/tcp_store_client.hpp"

#include <fmt/format.h>

#include "runtime/core/errors.hpp"

namespace distlab::comm::detail {

TCPStoreConnection::TCPStoreConnection(const std::string& host, int port, bool countsAsWorker,
                                       const Deadline& deadline)
    : sock_(connectTcp(host, port, deadline)) {
  setNonBlocking(sock_.fd());
  Encoder hello;
  hello.u8(static_cast<uint8_t>(Op::kHello)).u32(kMagic).u32(kVersion).u8(countsAsWorker ? 1 : 0);
  std::string reply = roundTrip(hello, deadline);
  if (reply.empty() || static_cast<Status>(reply[0]) != Status::kOk) {
    broken_ = true;
    throw DistNetworkError("the server rejected the handshake");
  }
}

std::string TCPStoreConnection::roundTrip(const Encoder& request, const Deadline& deadline) {
  if (broken_) throw DistNetworkError("the connection is broken by an earlier error");
  try {
    std::string frame = request.frame();
    if (!sendAll(sock_.fd(), frame.data(), frame.size(), deadline)) {
      broken_ = true;
      throw DistStoreError("timed out sending a request to the server");
    }
    char head[4];
    if (!recvExact(sock_.fd(), head, 4, deadline)) {
      broken_ = true;
      throw DistStoreError("timed out waiting for the server's reply");
    }
    uint32_t len = Decoder(head, 4).u32();
    if (len == 0 || len > kMaxFrameBytes) {
      broken_ = true;
      throw DistNetworkError(fmt::format("reply frame of {} bytes is malformed", len));
    }
    std::string payload(len, '\0');
    if (!recvExact(sock_.fd(), payload.data(), len, deadline)) {
      broken_ = true;
      throw DistStoreError("timed out reading the server's reply");
    }
    return payload;
  } catch (const DistNetworkError&) {
    broken_ = true;
    throw;
  } catch (const ProtocolError& e) {
    broken_ = true;
    throw DistNetworkError(e.what());
  }
}

}  // namespace distlab::comm::detail
