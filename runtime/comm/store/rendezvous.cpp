#include "runtime/comm/store/rendezvous.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <charconv>
#include <climits>
#include <mutex>

#include <fmt/format.h>

#include "runtime/comm/store/file_store.hpp"
#include "runtime/comm/store/prefix_store.hpp"
#include "runtime/comm/store/tcp_store.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab::comm {
namespace {

int parseIntParam(const std::string& url, const std::string& name, const std::string& text,
                  int min, int max) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < min ||
      value > max) {
    throw ValueError(fmt::format("init_method '{}': {}='{}' is not an integer in [{}, {}]", url,
                                 name, text, min, max));
  }
  return value;
}

// Combines an explicit argument with a URL query value; they must agree.
int merge(const std::string& url, const char* argName, int arg, const InitMethod& m,
          const char* param) {
  auto it = m.query.find(param);
  if (it == m.query.end()) return arg;
  int fromUrl = parseIntParam(url, param, it->second, 0, INT_MAX);
  if (arg >= 0 && arg != fromUrl) {
    throw ValueError(fmt::format("init_method '{}' says {}={} but the {} argument is {}; give "
                                 "one or make them agree", url, param, fromUrl, argName, arg));
  }
  return fromUrl;
}

void checkRankAndSize(const std::string& what, int rank, int worldSize) {
  if (worldSize < 1) {
    throw ValueError(fmt::format("{}: world_size must be given and >= 1 (found {})", what,
                                 worldSize));
  }
  if (rank < 0 || rank >= worldSize) {
    throw ValueError(fmt::format("{}: rank must be given and lie in [0, {}) (found {})", what,
                                 worldSize, rank));
  }
}

// The options' read of the environment, or one made now.
RuntimeEnv environmentOf(const RendezvousOptions& o) {
  return o.env ? *o.env : readRuntimeEnv();
}

std::shared_ptr<Store> tcpStore(const std::string& host, int port, int rank, int worldSize,
                                std::chrono::milliseconds timeout, bool external) {
  TCPStoreOptions o;
  o.host = host;
  o.port = port;
  o.isMaster = rank == 0 && !external;
  o.worldSize = worldSize;
  o.waitForWorkers = true;
  o.timeout = timeout;
  return std::make_shared<TCPStore>(o);
}

}  // namespace

void awaitLaunchRelease(int fd, std::chrono::milliseconds limit) {
  static std::mutex mutex;
  static bool released = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (released) return;
  const Deadline deadline = Deadline::after(limit);
  char buf[64];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const auto left = deadline.remaining().count();
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0 && (p.revents & POLLNVAL)) {
      throw ValueError(fmt::format("DISTLAB_LAUNCH_RELEASE_FD={} is not an open descriptor; unset "
                                   "it (only the launcher sets it)", fd));
    }
    if (ready > 0) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // end of file (or a broken pipe): released
      continue;           // bytes are not part of the contract: read past them
    }
    if (deadline.expired()) {
      throw DistStoreError(fmt::format("the launcher did not start every rank within {} s "
                                       "(waited on DISTLAB_LAUNCH_RELEASE_FD={})",
                                       limit.count() / 1000, fd));
    }
  }
  ::close(fd);
  released = true;
}

namespace {

RendezvousResult envRendezvous(const RendezvousOptions& o, const InitMethod& m) {
  std::string url = o.initMethod.empty() ? "env://" : o.initMethod;
  const RuntimeEnv env = environmentOf(o);
  int rank = merge(url, "rank", o.rank, m, "rank");
  int worldSize = merge(url, "world_size", o.worldSize, m, "world_size");
  if (worldSize < 0) worldSize = env.requiredWorldSize();
  if (rank < 0) rank = env.requiredRank();
  checkRankAndSize(url, rank, worldSize);
  std::string addr = env.masterAddr.value_or("");
  if (addr.empty()) {
    if (rank != 0) {
      throw ValueError("environment variable MASTER_ADDR is not set; set it to the address of "
                       "the rank 0 host (env:// needs it on every rank but 0)");
    }
    addr = "127.0.0.1";
  }
  const int port = env.requiredMasterPort();
  if (env.launchReleaseFd >= 0) awaitLaunchRelease(env.launchReleaseFd, kLaunchReleaseWait);
  std::shared_ptr<Store> store = tcpStore(addr, port, rank, worldSize, o.timeout,
                                          env.storeExternal);
  if (!env.storePrefix.empty()) store = std::make_shared<PrefixStore>(env.storePrefix, store);
  return {store, rank, worldSize};
}

RendezvousResult tcpRendezvous(const RendezvousOptions& o, const InitMethod& m) {
  const std::string& url = o.initMethod;
  int rank = merge(url, "rank", o.rank, m, "rank");
  int worldSize = merge(url, "world_size", o.worldSize, m, "world_size");
  checkRankAndSize(url, rank, worldSize);
  auto colon = m.location.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    throw ValueError(fmt::format("init_method '{}': expected tcp://host:port", url));
  }
  std::string host = m.location.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // [::1]:port
  }
  int port = parseIntParam(url, "port", m.location.substr(colon + 1), 1, 65535);
  const bool external = environmentOf(o).storeExternal;
  return {tcpStore(host, port, rank, worldSize, o.timeout, external), rank, worldSize};
}

RendezvousResult fileRendezvous(const RendezvousOptions& o, const InitMethod& m) {
  const std::string& url = o.initMethod;
  int rank = merge(url, "rank", o.rank, m, "rank");
  int worldSize = merge(url, "world_size", o.worldSize, m, "world_size");
  checkRankAndSize(url, rank, worldSize);
  if (m.location.empty()) {
    throw ValueError(fmt::format("init_method '{}': expected file:///path/to/file", url));
  }
  return {std::make_shared<FileStore>(m.location, worldSize, o.timeout), rank, worldSize};
}

}  // namespace

InitMethod parseInitMethod(const std::string& url) {
  auto sep = url.find("://");
  if (sep == std::string::npos || sep == 0) {
    throw ValueError(fmt::format("init_method '{}' is not a URL; use env://, tcp://host:port or "
                                 "file:///path", url));
  }
  InitMethod m;
  m.scheme = url.substr(0, sep);
  std::string rest = url.substr(sep + 3);
  auto q = rest.find('?');
  m.location = rest.substr(0, q);
  if (q != std::string::npos) {
    std::string query = rest.substr(q + 1);
    size_t pos = 0;
    while (pos <= query.size()) {
      size_t amp = query.find('&', pos);
      std::string item = query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
      auto eq = item.find('=');
      if (!item.empty()) {
        if (eq == std::string::npos || eq == 0) {
          throw ValueError(fmt::format("init_method '{}': query item '{}' is not name=value", url,
                                       item));
        }
        m.query[item.substr(0, eq)] = item.substr(eq + 1);
      }
      if (amp == std::string::npos) break;
      pos = amp + 1;
    }
  }
  if (m.scheme != "env" && m.scheme != "tcp" && m.scheme != "file") {
    throw ValueError(fmt::format("init_method '{}': unknown scheme '{}'; use env://, "
                                 "tcp://host:port or file:///path", url, m.scheme));
  }
  return m;
}

RendezvousResult rendezvous(const RendezvousOptions& options) {
  if (options.store) {
    if (!options.initMethod.empty()) {
      throw ValueError(fmt::format("init_method '{}' and store are mutually exclusive; give one",
                                   options.initMethod));
    }
    checkRankAndSize("init with an explicit store", options.rank, options.worldSize);
    return {options.store, options.rank, options.worldSize};
  }
  if (options.timeout.count() < 0) throw ValueError("rendezvous: timeout must not be negative");
  InitMethod m = parseInitMethod(options.initMethod.empty() ? "env://" : options.initMethod);
  if (m.scheme == "env") return envRendezvous(options, m);
  if (m.scheme == "tcp") return tcpRendezvous(options, m);
  return fileRendezvous(options, m);
}

}  // namespace distlab::comm
