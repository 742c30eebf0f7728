#include "runtime/core/current_pid.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace distlab {
namespace {

std::atomic<pid_t> gPid{0};

void readPid() { gPid.store(::getpid(), std::memory_order_relaxed); }

}  // namespace

pid_t currentPid() {
  const pid_t known = gPid.load(std::memory_order_relaxed);
  if (known != 0) return known;
  // Registered before the first read, so a fork() after the read refreshes it.
  static const bool registered = pthread_atfork(nullptr, nullptr, readPid) == 0;
  if (!registered) return ::getpid();  // no handler: never cache
  readPid();
  return gPid.load(std::memory_order_relaxed);
}

}  // namespace distlab
