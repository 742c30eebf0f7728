// One client's reads, writes and requests on the TCP store server's loop
// (tcp_store_server_loop.hpp). Every failure here drops that client only.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "runtime/comm/store/tcp_store_server_loop.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm {

void TCPStoreServer::Loop::serve(ServerClient& c, short revents) {
  try {
    if (revents & (POLLIN | POLLHUP | POLLERR)) readFrom(c);
    if (!c.dead && (revents & POLLOUT)) flush(c);
    if (!c.dead) processFrames(c);
  } catch (const std::exception& e) {  // e.g. out of memory: this client only
    drop(c, fmt::format("serving it failed: {}", e.what()), true);
  }
}

void TCPStoreServer::Loop::readFrom(ServerClient& c) {
  char buf[65536];
  while (true) {
    ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
    if (n > 0) {
      if (!c.appendIn(buf, static_cast<size_t>(n))) {
        drop(c, fmt::format("sent more than it may buffer: {}", c.dropReason()), true);
        return;
      }
      c.lastInput = Clock::now();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // Orderly close or error. The complete requests it sent before closing
    // are still served, in order (a rank may publish a key and exit at once:
    // the key must not be lost; the replies go nowhere); only an unfinished
    // frame is the client's fault. Requests queued behind a blocking one it
    // left waiting cannot be served in order, and are not its fault either.
    c.closedByPeer = true;
    if (!c.parked) processFrames(c);
    if (c.dead) return;
    if (c.partialFrame() && !c.parked) {
      drop(c, fmt::format("disconnected mid-request ({} bytes of an unfinished frame)",
                          c.in().size()), true);
    } else if (c.parked) {
      drop(c, "disconnected while waiting for keys", false);
    } else {
      drop(c, "disconnected", false);
    }
    return;
  }
}

void TCPStoreServer::Loop::flush(ServerClient& c) {
  size_t sent = 0;
  const std::string& out = c.out();
  while (sent < out.size()) {
    ssize_t n = ::send(c.fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    std::string why = std::strerror(errno);
    c.consumeOut(sent);
    drop(c, fmt::format("send failed: {}", why), !c.in().empty() || c.parked);
    return;
  }
  c.consumeOut(sent);
}

void TCPStoreServer::Loop::processFrames(ServerClient& c) {
  size_t pos = 0;
  const std::string& in = c.in();
  while (!c.parked && !c.dead && in.size() - pos >= 4) {
    uint32_t len = detail::Decoder(in.data() + pos, 4).u32();
    // A frame that could never fit the client's input cap is refused as
    // soon as its length is known.
    size_t limit = c.hello ? std::min<size_t>(detail::kMaxFrameBytes, caps_.input - 4)
                           : TCPStoreServerOptions::kMaxHandshakeInputBytes - 4;
    if (len == 0 || len > limit) {
      drop(c, fmt::format("frame of {} bytes is outside 1..{}{}", len, limit,
                          c.hello ? "" : " (before the handshake)"), true);
      return;
    }
    if (in.size() - pos - 4 < len) break;
    try {
      state_.handle(c, in.data() + pos + 4, len);
    } catch (const detail::ProtocolError& e) {
      drop(c, fmt::format("malformed request: {}", e.what()), true);
      return;
    }
    pos += 4 + size_t{len};
    if (!c.dropReason().empty()) {
      drop(c, fmt::format("its replies are not read: {}", c.dropReason()), true);
      return;
    }
  }
  c.consumeIn(pos);
  if (c.closedByPeer) {
    c.consumeOut(c.out().size());  // nobody reads them
  } else if (!c.out().empty()) {
    flush(c);
  }
}

void TCPStoreServer::Loop::handleReadyClients() {
  // Serving a waiter can unpark a client whose buffered requests change the
  // store and satisfy further waiters; repeat until nothing changes.
  while (true) {
    auto unparked = state_.serviceWaiters([this](uint64_t id) -> ServerClient* {
      auto it = clients_.find(id);
      return it == clients_.end() ? nullptr : it->second.get();
    });
    if (unparked.empty()) return;
    for (ServerClient* c : unparked) {
      if (c->dead) continue;
      if (!c->dropReason().empty()) {
        drop(*c, fmt::format("its reply cannot be held: {}", c->dropReason()), true);
        continue;
      }
      serve(*c, 0);
    }
  }
}

void TCPStoreServer::Loop::expireIdleClients() {
  Clock::time_point now = Clock::now();
  for (auto& [id, c] : clients_) {
    if (c->dead || c->in().empty() || now - c->lastInput < options_.partialFrameTimeout) continue;
    if (!c->partialFrame()) continue;
    drop(*c, fmt::format("sent {} bytes of an unfinished frame, then nothing for {} ms "
                         "(partialFrameTimeout)", c->in().size(),
                         options_.partialFrameTimeout.count()), true);
  }
}

void TCPStoreServer::Loop::drop(ServerClient& c, const std::string& reason, bool isError) {
  if (c.dead) return;
  c.dead = true;
  if (isError) {
    owner_.dropped_.fetch_add(1);
    DL_LOG(ERROR, "TCP store server (port {}): dropping client {} ({}): {}", owner_.port_, c.id,
           c.peer, reason);
  } else {
    DL_LOG(DEBUG, "TCP store server (port {}): client {} ({}) {}", owner_.port_, c.id, c.peer,
           reason);
  }
}

}  // namespace distlab::comm
