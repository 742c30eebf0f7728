#include "runtime/comm/store/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "runtime/core/errors.hpp"

namespace distlab::comm::detail {
namespace {

std::atomic<int64_t> gConnectRetries{0};

std::string errnoText(int err) { return std::strerror(err); }

// Waits for `events` on fd; false on deadline. Retries EINTR.
bool pollFor(int fd, short events, const Deadline& deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    int ms = static_cast<int>(std::min<int64_t>(deadline.remaining().count(), 1 << 30));
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw DistNetworkError("poll failed: " + errnoText(errno));
  }
}

// One non-blocking connect attempt bounded by the deadline; returns the
// connected socket or an invalid one with *err set.
Socket tryConnect(const addrinfo* ai, const Deadline& deadline, int* err) {
  Socket s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
  if (!s.valid()) {
    *err = errno;
    return {};
  }
  setNonBlocking(s.fd());
  if (::connect(s.fd(), ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      *err = errno;
      return {};
    }
    if (!pollFor(s.fd(), POLLOUT, deadline)) {
      *err = ETIMEDOUT;
      return {};
    }
    int soErr = 0;
    socklen_t len = sizeof(soErr);
    ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &soErr, &len);
    if (soErr != 0) {
      *err = soErr;
      return {};
    }
  }
  int one = 1;
  ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return s;
}

}  // namespace

void Socket::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void setNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

Socket listenTcp(int port, const std::string& address, int* boundPort) {
  if (port < 0 || port > 65535) {
    throw ValueError(fmt::format("TCP port {} is out of range; use 0..65535 (0 = pick a free "
                                 "port)", port));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    throw ValueError(fmt::format("bind address '{}' is not an IPv4 address; use e.g. 127.0.0.1 "
                                 "or 0.0.0.0", address));
  }
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) throw DistNetworkError("socket() failed: " + errnoText(errno));
  int one = 1;
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    throw DistNetworkError(fmt::format("cannot bind TCP {}:{}: {}{}", address, port,
                                       errnoText(err),
                                       err == EADDRINUSE ? " (pick another port, or 0)" : ""));
  }
  if (::listen(s.fd(), 1024) != 0) throw DistNetworkError("listen failed: " + errnoText(errno));
  socklen_t len = sizeof(addr);
  ::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&addr), &len);
  *boundPort = ntohs(addr.sin_port);
  return s;
}

Socket connectTcp(const std::string& host, int port, const Deadline& deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) {
    throw DistNetworkError(fmt::format("cannot resolve host '{}': {}", host, gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(list, &::freeaddrinfo);
  auto backoff = std::chrono::milliseconds(10);
  int lastErr = 0;
  while (true) {
    for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
      Socket s = tryConnect(ai, deadline, &lastErr);
      if (s.valid()) return s;
    }
    if (deadline.expired()) {
      throw DistNetworkError(fmt::format("cannot connect to {}:{} before the timeout: {}", host,
                                         port, errnoText(lastErr)));
    }
    gConnectRetries.fetch_add(1);
    std::this_thread::sleep_for(std::min(backoff, deadline.remaining()));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
}

int64_t connectRetries() { return gConnectRetries.load(); }

bool sendAll(int fd, const void* data, size_t size, const Deadline& deadline) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!pollFor(fd, POLLOUT, deadline)) return false;
      continue;
    }
    throw DistNetworkError("send failed: " + errnoText(errno));
  }
  return true;
}

bool recvExact(int fd, void* data, size_t size, const Deadline& deadline) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::recv(fd, p, size, 0);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) throw DistNetworkError("connection closed by the peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!pollFor(fd, POLLIN, deadline)) return false;
      continue;
    }
    throw DistNetworkError("recv failed: " + errnoText(errno));
  }
  return true;
}

}  // namespace distlab::comm::detail
