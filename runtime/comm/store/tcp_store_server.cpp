#include "runtime/comm/store/tcp_store_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "runtime/comm/store/tcp_store_server_state.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm {

using detail::ServerClient;

// A client that keeps sending while parked may buffer at most this much.
constexpr size_t kMaxBufferedBytes = 2 * size_t{detail::kMaxFrameBytes} + 8;

class TCPStoreServer::Loop {
 public:
  Loop(TCPStoreServer& owner, detail::Socket listener)
      : owner_(owner), listener_(std::move(listener)) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw DistNetworkError(fmt::format("TCP store server: pipe failed: {}",
                                         std::strerror(errno)));
    }
  }
  ~Loop() {
    for (auto& [id, c] : clients_) ::close(c.fd);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  void stop() {
    stop_.store(true);
    char b = 1;
    ssize_t ignored = ::write(wake_[1], &b, 1);
    (void)ignored;
  }

  void run() {
    while (!stop_.load()) {
      pollOnce();
      handleReadyClients();
      sweep();
    }
  }

 private:
  void pollOnce();
  void acceptAll();
  void readFrom(ServerClient& c);
  void flush(ServerClient& c);
  void processFrames(ServerClient& c);
  void handleReadyClients();
  void drop(ServerClient& c, const std::string& reason, bool isError);
  void sweep();

  TCPStoreServer& owner_;
  detail::Socket listener_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  uint64_t nextId_ = 1;
  std::map<uint64_t, ServerClient> clients_;
  std::vector<pollfd> fds_;
  std::vector<uint64_t> fdOwner_;
  detail::ServerState state_;
};

void TCPStoreServer::Loop::pollOnce() {
  fds_.clear();
  fdOwner_.clear();
  fds_.push_back({wake_[0], POLLIN, 0});
  fds_.push_back({listener_.fd(), POLLIN, 0});
  for (auto& [id, c] : clients_) {
    short events = POLLIN;
    if (!c.out.empty()) events |= POLLOUT;
    fds_.push_back({c.fd, events, 0});
    fdOwner_.push_back(id);
  }
  int timeoutMs = -1;
  if (auto next = state_.nextDeadline()) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
    timeoutMs = static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
  }
  int rc = ::poll(fds_.data(), fds_.size(), timeoutMs);
  if (rc < 0) {
    if (errno != EINTR) DL_LOG(ERROR, "TCP store server: poll failed: {}", std::strerror(errno));
    return;
  }
  if (fds_[0].revents != 0) {
    char buf[64];
    while (::read(wake_[0], buf, sizeof(buf)) > 0) {
    }
  }
  if (fds_[1].revents & POLLIN) acceptAll();
  for (size_t i = 2; i < fds_.size(); ++i) {
    if (fds_[i].revents == 0) continue;
    auto it = clients_.find(fdOwner_[i - 2]);
    if (it == clients_.end()) continue;
    ServerClient& c = it->second;
    if (c.dead) continue;
    if (fds_[i].revents & (POLLIN | POLLHUP | POLLERR)) readFrom(c);
    if (!c.dead && (fds_[i].revents & POLLOUT)) flush(c);
    if (!c.dead) processFrames(c);
  }
}

void TCPStoreServer::Loop::acceptAll() {
  while (true) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    int fd = ::accept4(listener_.fd(), reinterpret_cast<sockaddr*>(&addr), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        DL_LOG(WARNING, "TCP store server: accept failed: {}", std::strerror(errno));
      }
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ServerClient c;
    c.id = nextId_++;
    c.fd = fd;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (addr.ss_family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(&addr);
      ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
      port = ntohs(in->sin_port);
    }
    c.peer = fmt::format("{}:{}", host, port);
    clients_.emplace(c.id, std::move(c));
    owner_.connected_.fetch_add(1);
  }
}

void TCPStoreServer::Loop::readFrom(ServerClient& c) {
  char buf[65536];
  while (true) {
    ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      if (c.in.size() > kMaxBufferedBytes) {
        drop(c, fmt::format("sent more than {} bytes without reading replies", kMaxBufferedBytes),
             true);
        return;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // Orderly close or error: mid-request if a partial frame or a parked
    // request was pending.
    if (!c.in.empty()) {
      drop(c, fmt::format("disconnected mid-request ({} bytes of an unfinished frame)",
                          c.in.size()), true);
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
  while (sent < c.out.size()) {
    ssize_t n = ::send(c.fd, c.out.data() + sent, c.out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    c.out.erase(0, sent);
    drop(c, fmt::format("send failed: {}", std::strerror(errno)), !c.in.empty() || c.parked);
    return;
  }
  c.out.erase(0, sent);
}

void TCPStoreServer::Loop::processFrames(ServerClient& c) {
  size_t pos = 0;
  while (!c.parked && !c.dead && c.in.size() - pos >= 4) {
    detail::Decoder head(c.in.data() + pos, 4);
    uint32_t len = head.u32();
    if (len == 0 || len > detail::kMaxFrameBytes) {
      drop(c, fmt::format("frame of {} bytes is outside 1..{}", len, detail::kMaxFrameBytes),
           true);
      return;
    }
    if (c.in.size() - pos - 4 < len) break;
    try {
      state_.handle(c, c.in.data() + pos + 4, len);
    } catch (const std::exception& e) {
      drop(c, fmt::format("malformed request: {}", e.what()), true);
      return;
    }
    pos += 4 + len;
  }
  c.in.erase(0, pos);
  if (!c.out.empty()) flush(c);
}

void TCPStoreServer::Loop::handleReadyClients() {
  // Serving a waiter can unpark a client whose buffered requests change the
  // store and satisfy further waiters; repeat until nothing changes.
  while (true) {
    auto unparked = state_.serviceWaiters([this](uint64_t id) -> ServerClient* {
      auto it = clients_.find(id);
      return it == clients_.end() ? nullptr : &it->second;
    });
    if (unparked.empty()) return;
    for (ServerClient* c : unparked) {
      if (!c->dead) processFrames(*c);
    }
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

void TCPStoreServer::Loop::sweep() {
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (!it->second.dead) {
      ++it;
      continue;
    }
    state_.dropClient(it->first);
    ::close(it->second.fd);
    owner_.connected_.fetch_sub(1);
    it = clients_.erase(it);
  }
}

TCPStoreServer::TCPStoreServer(int port) {
  detail::Socket listener = detail::listenTcp(port, &port_);
  loop_ = std::make_unique<Loop>(*this, std::move(listener));
  thread_ = std::thread([this] {
    try {
      loop_->run();
    } catch (const std::exception& e) {
      DL_LOG(FATAL, "TCP store server (port {}): event loop failed: {}", port_, e.what());
    }
  });
}

TCPStoreServer::~TCPStoreServer() {
  loop_->stop();
  thread_.join();
}

}  // namespace distlab::comm
