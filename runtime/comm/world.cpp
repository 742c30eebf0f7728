#include "runtime/comm/world.hpp"

#include "runtime/comm/group_management.hpp"
#include "runtime/comm/store/rendezvous.hpp"
#include "runtime/core/errors.hpp"

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
  RendezvousResult r = comm::rendezvous(
      {.initMethod = url, .rank = rank, .worldSize = worldSize, .timeout = timeout, .env = env});
  return Rendezvous{r.store, r.rank, r.worldSize};
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
