#pragma once
// Backends by name, and the decorators applied to every new group's backends.
//
// Registration (Backend.register_backend): a backend folder registers its
// factory from a function listed in its sources.cmake
// (`list(APPEND DISTLAB_COMM_BACKEND_REGISTRARS registerShmBackend)`); the
// build generates a call to each, run once before the first lookup, so adding
// a backend never edits this code. Tests and plugins may also call
// registerBackend() directly. Names are lowercase; lookups lowercase their
// argument (Backend("GLOO") == "gloo").
//
// Decorators: addBackendDecorator(name, layer, factory) installs a wrapper that
// ProcessGroup applies to each backend it creates from then on (existing
// groups are unchanged). Layers order the wrappers: the lowest layer is the
// outermost. Order (docs/DESIGN.md, "Decorators at seams"), outermost first:
//   kLayerDebug (wrapper checks) -> kLayerFault -> kLayerLink -> kLayerRecorder -> backend.
// A factory may return `inner` unchanged to skip a backend (e.g. by name).
// Thread-safe.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/backend.hpp"
#include "runtime/comm/backend_options.hpp"

namespace distlab::comm {

using BackendFactory = std::function<BackendPtr(const BackendContext&)>;

struct BackendInfo {
  std::string name;
  BackendFactory factory;
  std::vector<std::string> devices{"cpu"};  // device types served ("cpu", "cuda")
  // A host backend that also serves CUDA tensors through pinned staging
  // (cuda_staging_backend.hpp); lists "cuda" in `devices` when CUDA is built.
  bool stagesCuda = false;
  // The "<name>.*" keys of BackendContext::options this backend reads, each
  // with its check (Note [Backend options] in backend_options.hpp).
  std::vector<BackendOptionSpec> options;
  // Set by a backend that can carry DETAIL's fingerprint exchange in a small
  // helper instance of itself (Note [DETAIL through the backend]): given the
  // bytes of one rank's slot and the group's size, the options for that
  // helper (one blocking all-gather of a slot per rank per collective). Unset:
  // DETAIL exchanges through the store.
  std::function<std::map<std::string, std::string>(int64_t slotBytes, int groupSize)>
      detailHelperOptions;
};

// A host backend's registration: "cpu", plus "cuda" through pinned staging
// when distlab is built with CUDA (stagesCuda).
BackendInfo hostBackendInfo(std::string name, BackendFactory factory);

// Throws ValueError if `name` is registered already.
void registerBackend(BackendInfo info);
bool isBackendRegistered(const std::string& name);
// Throws ValueError naming the unknown backend and the registered ones.
const BackendInfo& lookupBackend(const std::string& name);
std::vector<std::string> registeredBackends();  // sorted
// Creates a backend by name (no decorators).
BackendPtr createBackend(const std::string& name, const BackendContext& context);

// Parses "shm" or "cpu:shm,cuda:nccl" into (device type, backend name) pairs.
// A bare name maps every device the backend registered for. Throws ValueError
// naming the spec on a malformed entry or unknown backend/device.
std::vector<std::pair<std::string, std::string>> parseBackendSpec(const std::string& spec);

// ---- decorators -------------------------------------------------------------------
using BackendDecorator = std::function<BackendPtr(BackendPtr inner, const BackendContext&)>;

inline constexpr int kLayerDebug = 100;
inline constexpr int kLayerFault = 200;
inline constexpr int kLayerLink = 300;
inline constexpr int kLayerRecorder = 400;

// Replaces a decorator of the same name.
void addBackendDecorator(const std::string& name, int layer, BackendDecorator decorator);
bool removeBackendDecorator(const std::string& name);
void clearBackendDecorators();
std::vector<std::string> backendDecoratorNames();  // outermost first
// Wraps `backend` in every installed decorator (innermost first applied).
BackendPtr applyBackendDecorators(BackendPtr backend, const BackendContext& context);

}  // namespace distlab::comm
