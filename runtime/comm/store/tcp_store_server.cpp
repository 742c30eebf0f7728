#include "runtime/comm/store/tcp_store_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "runtime/comm/store/tcp_store_server_loop.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm {
namespace {

constexpr auto kAcceptLogInterval = std::chrono::seconds(10);

std::string peerName(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
  }
  return fmt::format("{}:{}", host, port);
}

bool outOfResources(int err) {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

void validate(const TCPStoreServerOptions& o) {
  auto bad = [](const std::string& what) {
    throw ValueError("TCP store server: " + what);
  };
  if (o.maxClientInputBytes < TCPStoreServerOptions::kMaxHandshakeInputBytes) {
    bad(fmt::format("maxClientInputBytes {} is below {}; give at least that much",
                    o.maxClientInputBytes, TCPStoreServerOptions::kMaxHandshakeInputBytes));
  }
  if (o.maxClientOutputBytes < 64) {
    bad(fmt::format("maxClientOutputBytes {} cannot hold a reply; give at least 64",
                    o.maxClientOutputBytes));
  }
  if (o.maxTotalBufferedBytes < o.maxClientOutputBytes) {
    bad(fmt::format("maxTotalBufferedBytes {} is below maxClientOutputBytes {}",
                    o.maxTotalBufferedBytes, o.maxClientOutputBytes));
  }
  if (o.partialFrameTimeout.count() <= 0 || o.acceptRetryInterval.count() <= 0) {
    bad("partialFrameTimeout and acceptRetryInterval must be positive");
  }
}

}  // namespace

std::string storeBindAddress(const std::string& host) {
  if (host == "127.0.0.1" || host == "localhost" || host == "::1") return "127.0.0.1";
  return "0.0.0.0";
}

TCPStoreServer::Loop::Loop(TCPStoreServer& owner, detail::Socket listener)
    : owner_(owner),
      options_(owner.options_),
      listener_(std::move(listener)),
      caps_{options_.maxClientInputBytes, TCPStoreServerOptions::kMaxHandshakeInputBytes,
            options_.maxClientOutputBytes},
      ledger_(options_.maxTotalBufferedBytes, owner.buffered_, owner.peakBuffered_) {
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw DistNetworkError(fmt::format("TCP store server: pipe failed: {}", std::strerror(errno)));
  }
}

TCPStoreServer::Loop::~Loop() {
  for (auto& [id, c] : clients_) ::close(c->fd);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void TCPStoreServer::Loop::stop() {
  stop_.store(true);
  char b = 1;
  ssize_t ignored = ::write(wake_[1], &b, 1);
  (void)ignored;
}

void TCPStoreServer::Loop::run() {
  while (!stop_.load()) {
    pollOnce();
    handleReadyClients();
    expireIdleClients();
    sweep();
    owner_.waiting_.store(state_.numWaiters());
  }
}

int TCPStoreServer::Loop::pollTimeoutMs() const {
  std::optional<Clock::time_point> next = state_.nextDeadline();
  auto consider = [&next](Clock::time_point t) {
    if (!next || t < *next) next = t;
  };
  if (acceptPausedUntil_) consider(*acceptPausedUntil_);
  // Only partial frames time out; a parked client's complete buffered
  // requests must not make the loop spin once their age passes the timeout.
  for (const auto& [id, c] : clients_) {
    if (!c->in().empty() && c->partialFrame()) {
      consider(c->lastInput + options_.partialFrameTimeout);
    }
  }
  if (!next) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

void TCPStoreServer::Loop::pollOnce() {
  if (acceptPausedUntil_ && Clock::now() >= *acceptPausedUntil_) acceptPausedUntil_.reset();
  fds_.clear();
  fdOwner_.clear();
  fds_.push_back({wake_[0], POLLIN, 0});
  // A paused listener is left out (Note [Accept back-off]); fd -1 is ignored.
  fds_.push_back({acceptPausedUntil_ ? -1 : listener_.fd(), POLLIN, 0});
  for (auto& [id, c] : clients_) {
    short events = POLLIN;
    if (!c->out().empty()) events |= POLLOUT;
    fds_.push_back({c->fd, events, 0});
    fdOwner_.push_back(id);
  }
  int rc = ::poll(fds_.data(), fds_.size(), pollTimeoutMs());
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
    if (it != clients_.end() && !it->second->dead) serve(*it->second, fds_[i].revents);
  }
}

void TCPStoreServer::Loop::acceptAll() {
  while (true) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    int fd = ::accept4(listener_.fd(), reinterpret_cast<sockaddr*>(&addr), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == EINTR || err == ECONNABORTED) continue;
      if (err != EAGAIN && err != EWOULDBLOCK) pauseAccepting(err);
      return;
    }
    if (failureLogged_) {
      DL_LOG(WARNING, "TCP store server (port {}): accepting connections again",
             owner_.port_);
      failureLogged_ = false;
    }
    addClient(fd, peerName(addr));
  }
}

void TCPStoreServer::Loop::addClient(int fd, const std::string& peer) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  uint64_t id = nextId_++;
  clients_.emplace(id, std::make_unique<ServerClient>(id, fd, peer, caps_, ledger_));
  owner_.connected_.fetch_add(1);
}

void TCPStoreServer::Loop::pauseAccepting(int err) {
  Clock::time_point now = Clock::now();
  acceptPausedUntil_ = now + options_.acceptRetryInterval;
  owner_.acceptPauses_.fetch_add(1);
  ++acceptFailures_;
  if (lastAcceptLog_ && now - *lastAcceptLog_ < kAcceptLogInterval) return;
  DL_LOG(WARNING, "TCP store server (port {}): cannot accept connections: {}{}; pausing accepts "
         "for {} ms or until a connection closes ({} failed attempt(s) since the last such "
         "line; it repeats at most every {} s)", owner_.port_, std::strerror(err),
         outOfResources(err) ? " (raise the open-file limit, ulimit -n)" : "",
         options_.acceptRetryInterval.count(), acceptFailures_,
         std::chrono::duration_cast<std::chrono::seconds>(kAcceptLogInterval).count());
  acceptFailures_ = 0;
  failureLogged_ = true;
  lastAcceptLog_ = now;
}

void TCPStoreServer::Loop::sweep() {
  bool closedAny = false;
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (!it->second->dead) {
      ++it;
      continue;
    }
    state_.dropClient(it->first);
    ::close(it->second->fd);
    owner_.connected_.fetch_sub(1);
    it = clients_.erase(it);
    closedAny = true;
  }
  // A descriptor was freed: try accepting again now (Note [Accept back-off]).
  if (closedAny) acceptPausedUntil_.reset();
}

TCPStoreServer::TCPStoreServer(int port) : TCPStoreServer(TCPStoreServerOptions{.port = port}) {}

TCPStoreServer::TCPStoreServer(TCPStoreServerOptions options) : options_(std::move(options)) {
  validate(options_);
  detail::Socket listener = detail::listenTcp(options_.port, options_.bindAddress, &port_);
  loop_ = std::make_unique<Loop>(*this, std::move(listener));
  thread_ = std::thread([this] {
    try {
      loop_->run();
    } catch (const std::exception& e) {
      DL_LOG(FATAL, "TCP store server (port {}): event loop failed: {}", port_, e.what());
    }
  });
  threadHandle_ = thread_.native_handle();
}

std::chrono::nanoseconds TCPStoreServer::loopCpuTime() const {
  clockid_t clock;
  timespec ts{};
  if (::pthread_getcpuclockid(threadHandle_, &clock) != 0 ||
      ::clock_gettime(clock, &ts) != 0) {
    throw DistNetworkError("TCP store server: cannot read the event loop's CPU clock");
  }
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

TCPStoreServer::~TCPStoreServer() {
  loop_->stop();
  thread_.join();
}

}  // namespace distlab::comm
