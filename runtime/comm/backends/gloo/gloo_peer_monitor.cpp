#include "runtime/comm/backends/gloo/gloo_peer_monitor.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>

#include "runtime/core/errors.hpp"

namespace distlab::comm::gloo_backend {
namespace {

bool sameAddress(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port &&
           std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
  }
  return false;
}

bool localAddress(int fd, sockaddr_storage* out) {
  socklen_t len = sizeof(*out);
  return ::getsockname(fd, reinterpret_cast<sockaddr*>(out), &len) == 0;
}

// The connected socket of this process whose local address is `local`, or -1.
int findSocket(const sockaddr_storage& local) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == ::dirfd(dir)) continue;
    sockaddr_storage addr{}, peer{};
    socklen_t len = sizeof(peer);
    if (!localAddress(static_cast<int>(fd), &addr) || !sameAddress(addr, local)) continue;
    if (::getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &len) != 0)
      continue;
    found = static_cast<int>(fd);
    break;
  }
  ::closedir(dir);
  return found;
}

constexpr Milliseconds kPollPeriod{20};
constexpr const char* kShutdownTag = "shutdown:";
constexpr const char* kFailedTag = "failed:";

}  // namespace

PeerMonitor::PeerMonitor(Config config) : config_(std::move(config)) {}

PeerMonitor::~PeerMonitor() { stop(); }

void PeerMonitor::watch(std::vector<std::shared_ptr<::gloo::Context>> contexts) {
  contexts_ = std::move(contexts);
  for (const auto& ctx : contexts_) {
    for (int q = 0; q < ctx->size; ++q) {
      if (q == ctx->rank) continue;
      auto& pair = ctx->getPair(q);
      if (!pair) continue;
      const auto* addr = dynamic_cast<const ::gloo::transport::tcp::Address*>(&pair->address());
      if (addr == nullptr) continue;
      Watched w;
      w.peer = q;
      w.local = addr->getSockaddr();
      w.fd = findSocket(w.local);
      if (w.fd >= 0) watched_.push_back(w);
    }
  }
}

bool PeerMonitor::alive(const Watched& w) const {
  sockaddr_storage now{};
  return localAddress(w.fd, &now) && sameAddress(now, w.local);
}

void PeerMonitor::start() { thread_ = std::thread([this] { loop(); }); }

void PeerMonitor::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PeerMonitor::opBegin() { inFlight_.fetch_add(1, std::memory_order_acq_rel); }
void PeerMonitor::opEnd() { inFlight_.fetch_sub(1, std::memory_order_acq_rel); }

std::string PeerMonitor::peerName(int peer) const {
  int global = peer < static_cast<int>(config_.globalRanks.size()) ? config_.globalRanks[peer]
                                                                    : peer;
  return fmt::format("peer rank {} (global rank {}) of group '{}'", peer, global,
                     config_.groupName);
}

std::vector<int> PeerMonitor::brokenPeers() const {
  std::vector<int> out;
  for (const auto& w : watched_) {
    if (!alive(w) && std::find(out.begin(), out.end(), w.peer) == out.end()) out.push_back(w.peer);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<PeerVerdict> PeerMonitor::judgeBroken(Milliseconds grace) const {
  auto rank = [](PeerState s) {
    return s == PeerState::kDied ? 0 : s == PeerState::kFailed ? 1 : 2;
  };
  Deadline deadline = Deadline::after(grace);
  // Gloo wakes the failed operation a moment before it closes the socket.
  std::vector<int> broken = brokenPeers();
  while (broken.empty() && !deadline.expired()) {
    std::this_thread::sleep_for(Milliseconds(5));
    broken = brokenPeers();
  }
  std::optional<PeerVerdict> best;
  for (int q : broken) {
    PeerVerdict v = judge(q, deadline.remaining());
    if (!best || rank(v.state) < rank(best->state)) best = v;
  }
  return best;
}

PeerVerdict PeerMonitor::judge(int peer, Milliseconds grace) const {
  PeerVerdict v;
  v.peer = peer;
  const std::string key = config_.recordPrefix + std::to_string(peer);
  Deadline deadline = Deadline::after(grace);
  while (true) {
    try {
      if (config_.store->check({key})) {
        std::string record = config_.store->getString(key);
        bool graceful = record.rfind(kShutdownTag, 0) == 0;
        std::string why = record.substr(record.find(':') + 1);
        v.state = graceful ? PeerState::kShutdown : PeerState::kFailed;
        if (!graceful) {
          // "<kind>:<why>"; a record of another form is a failure of no known kind.
          const size_t colon = why.find(':');
          const auto kind = colon == std::string::npos
                                ? std::nullopt
                                : parseFailureKind(std::string_view(why).substr(0, colon));
          v.timedOut = kind == FailureReason::kTimeout;
          if (kind) why.erase(0, colon + 1);
        }
        v.text = graceful ? fmt::format("{} shut down its process group ({})", peerName(peer), why)
                          : fmt::format("{} failed: {}", peerName(peer), why);
        return v;
      }
    } catch (const std::exception&) {
      break;  // the store is gone too (its host died): judge from the socket alone
    }
    if (deadline.expired()) break;
    std::this_thread::sleep_for(kPollPeriod);
  }
  v.state = PeerState::kDied;
  v.text = fmt::format(
      "{} closed its connection without a failure record: the process died or the network "
      "failed",
      peerName(peer));
  return v;
}

std::optional<PeerVerdict> PeerMonitor::verdict() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return verdict_;
}

void PeerMonitor::publish(const std::string& reason) {
  if (published_.exchange(true)) return;
  try {
    config_.store->setString(config_.recordPrefix + std::to_string(config_.rank), reason);
  } catch (const std::exception&) {
    // The store may be gone as well; peers then judge this rank from its socket.
  }
}

void PeerMonitor::interrupt() {
  interrupted_.store(true);
  for (const auto& w : watched_) {
    if (alive(w)) ::shutdown(w.fd, SHUT_RDWR);
  }
  if (config_.buffers) config_.buffers->abortAll();
}

void PeerMonitor::loop() {
  size_t shutdownPeers = 0;  // broken peers already judged "shut down"
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait_for(lock, kPollPeriod, [&] { return stopping_; });
      if (stopping_) return;
    }
    if (interrupted_.load()) {
      // An interrupted Gloo algorithm may wait again before it notices the
      // closed pairs: keep waking it until it has returned.
      if (inFlight_.load(std::memory_order_acquire) > 0 && config_.buffers)
        config_.buffers->abortAll();
      continue;
    }
    if (inFlight_.load(std::memory_order_acquire) == 0) continue;
    // Judging reads the store: only when the set of broken peers grew.
    size_t broken = brokenPeers().size();
    if (broken == 0 || broken <= shutdownPeers) continue;
    std::optional<PeerVerdict> judged = judgeBroken(config_.grace);
    if (!judged) continue;
    PeerVerdict v = *judged;
    if (v.state == PeerState::kShutdown) {
      shutdownPeers = broken;
      continue;
    }
    if (inFlight_.load(std::memory_order_acquire) == 0) continue;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      verdict_ = v;
    }
    // A cascade carries the kind on: peers of this rank judge the first failure.
    publish(failedRecord(v.timedOut ? FailureReason::kTimeout
                         : v.state == PeerState::kDied ? FailureReason::kPeerFailure
                                                        : FailureReason::kBackendError,
                         v.text));
    interrupt();
  }
}

// Record texts, shared with the backend.
std::string shutdownRecord(const std::string& why) { return std::string(kShutdownTag) + why; }
std::string failedRecord(FailureReason::Kind kind, const std::string& why) {
  return fmt::format("{}{}:{}", kFailedTag, failureKindName(kind), why);
}

}  // namespace distlab::comm::gloo_backend
