#pragma once
// Which network interfaces the Gloo backend's TCP transport binds to.
//
// Order of precedence (Note [Gloo interfaces]):
//   1. BackendContext option "gloo.socket_ifname" (comma list), then
//   2. GLOO_SOCKET_IFNAME (comma list; RuntimeEnv::glooSocketIfnames, which the
//      backend gets as BackendContext::env), then
//   3. option "gloo.hostname", then
//   4. the host's default: this host's name when it resolves to an address a
//      socket can bind, else 127.0.0.1 (PyTorch does the same).
// With several interfaces ("eth0,eth1") the backend creates one TCP device, and
// one Gloo context, per interface and dispatches collectives round-robin over
// them (collective i uses interface i mod n). Every rank must name the same
// number of interfaces; the backend checks this at rendezvous.
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gloo/transport/device.h>

#include "runtime/core/runtime_env.hpp"

namespace distlab::comm::gloo_backend {

struct DeviceSpec {
  std::vector<std::string> ifnames;  // empty: use `hostname`
  std::string hostname;              // used when ifnames is empty
  std::string source;                // where the choice came from (for messages)
};

// The option and the variable share one list syntax (runtime/core/runtime_env.hpp).
using distlab::parseIfnameList;

// Applies the precedence above to the backend options and `envIfnames`
// (GLOO_SOCKET_IFNAME as read, already split; empty: unset).
DeviceSpec resolveDeviceSpec(const std::map<std::string, std::string>& options,
                             const std::vector<std::string>& envIfnames);

// This host's name if it resolves to a bindable address, else "127.0.0.1".
std::string defaultHostname();

// One TCP device per interface (or one for the hostname). Throws ValueError
// naming the interface/hostname and its source when Gloo cannot use it.
std::vector<std::shared_ptr<::gloo::transport::Device>> createDevices(const DeviceSpec& spec);

}  // namespace distlab::comm::gloo_backend
