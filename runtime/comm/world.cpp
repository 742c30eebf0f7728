#include "runtime/comm/world.hpp"

#include "runtime/comm/group_management.hpp"
#include "runtime/core/errors.hpp"

#if __has_include("runtime/comm/store/rendezvous.hpp")
#include "runtime/comm/store/rendezvous.hpp"
#define DISTLAB_HAVE_RENDEZVOUS 1
#else
#define DISTLAB_HAVE_RENDEZVOUS 0
#endif

namespace distlab::comm {
namespace detail {
namespace {
thread_local World* tlsWorld = nullptr;
}  // namespace

World& currentWorld() {
  if (tlsWorld) return *tlsWorld;
  static World processWorld;
  return processWorld;
}

Rendezvous rendezvous(const std::string& url, int rank, int worldSize, Milliseconds timeout,
                      const RuntimeEnv& env) {
#if DISTLAB_HAVE_RENDEZVOUS
  RendezvousOptions options;
  options.initMethod = url;
  options.rank = rank;
  options.worldSize = worldSize;
  options.timeout = timeout;
  options.env = env;
  RendezvousResult r = comm::rendezvous(options);
  return Rendezvous{r.store, r.rank, r.worldSize};
#else
  (void)rank;
  (void)worldSize;
  (void)timeout;
  (void)env;
  throw ValueError("initProcessGroup: init method '" + url +
                   "' needs the rendezvous module; pass a store instead");
#endif
}

}  // namespace detail

ThreadWorldScope::ThreadWorldScope() {
  if (detail::tlsWorld) throw Error("ThreadWorldScope: nested scopes are not supported");
  detail::tlsWorld = new detail::World();
}

ThreadWorldScope::~ThreadWorldScope() {
  try {
    destroyProcessGroup();
  } catch (...) {
  }
  delete detail::tlsWorld;
  detail::tlsWorld = nullptr;
}

}  // namespace distlab::comm
