#include "runtime/comm/backends/gloo/gloo_device.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gloo/transport/tcp/device.h>

#include "runtime/core/errors.hpp"

namespace distlab::comm::gloo_backend {
namespace {

// True when `host` resolves to at least one address we can bind a socket to.
bool resolvesToBindable(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return false;
  bool ok = false;
  for (addrinfo* ai = result; ai != nullptr && !ok; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) continue;
    ok = ::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
    ::close(fd);
  }
  freeaddrinfo(result);
  return ok;
}

}  // namespace

DeviceSpec resolveDeviceSpec(const std::map<std::string, std::string>& options,
                             const std::vector<std::string>& envIfnames) {
  DeviceSpec spec;
  if (auto it = options.find("gloo.socket_ifname"); it != options.end()) {
    spec.ifnames = parseIfnameList(it->second, "option gloo.socket_ifname");
    spec.source = "option gloo.socket_ifname";
    return spec;
  }
  if (!envIfnames.empty()) {
    spec.ifnames = envIfnames;
    spec.source = "GLOO_SOCKET_IFNAME";
    return spec;
  }
  if (auto it = options.find("gloo.hostname"); it != options.end()) {
    spec.hostname = it->second;
    spec.source = "option gloo.hostname";
    return spec;
  }
  spec.hostname = defaultHostname();
  spec.source = "the host's default address";
  return spec;
}

std::string defaultHostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) == 0 && resolvesToBindable(name)) return name;
  return "127.0.0.1";
}

std::vector<std::shared_ptr<::gloo::transport::Device>> createDevices(const DeviceSpec& spec) {
  std::vector<std::shared_ptr<::gloo::transport::Device>> devices;
  auto make = [&](::gloo::transport::tcp::attr attr, const std::string& what) {
    try {
      devices.push_back(::gloo::transport::tcp::CreateDevice(attr));
    } catch (const std::exception& e) {
      throw ValueError(fmt::format("gloo: cannot use {} (from {}): {}", what, spec.source,
                                   e.what()));
    }
  };
  if (spec.ifnames.empty()) {
    ::gloo::transport::tcp::attr attr;
    attr.hostname = spec.hostname;
    make(attr, "host '" + spec.hostname + "'");
    return devices;
  }
  for (const auto& ifname : spec.ifnames) {
    ::gloo::transport::tcp::attr attr;
    attr.iface = ifname;
    make(attr, "interface '" + ifname + "'");
  }
  return devices;
}

}  // namespace distlab::comm::gloo_backend
