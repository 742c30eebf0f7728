#include "runtime/comm/init_hook.hpp"

#include <mutex>
#include <optional>

#include "runtime/core/check.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {
namespace {

std::mutex& hookMutex() {
  static std::mutex m;
  return m;
}

std::optional<InitHook>& registeredHook() {
  static std::optional<InitHook> hook;
  return hook;
}

}  // namespace

void setInitHook(InitHook hook) {
  DL_CHECK_T(ValueError, hook.prepare && hook.wrapStore,
             "setInitHook: prepare and wrapStore are both required");
  std::lock_guard<std::mutex> lock(hookMutex());
  registeredHook() = std::move(hook);
}

bool hasInitHook() {
  std::lock_guard<std::mutex> lock(hookMutex());
  return registeredHook().has_value();
}

namespace detail {

const InitHook* initHookFor(const RuntimeEnv& env) {
  if (env.scenarioFile.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(hookMutex());
  if (!registeredHook()) {
    throw ValueError(
        "initProcessGroup: DISTLAB_SCENARIO is set (this program runs under `distlab run` "
        "with scenario '" + env.scenarioFile + "') but the program does not link "
        "distlab::program, which installs the scenario's faults, link model and tracing: add "
        "`target_link_libraries(<your program> PRIVATE distlab::program)`, or unset "
        "DISTLAB_SCENARIO to run it without the scenario");
  }
  // Registered once at start-up and never removed while groups exist.
  return &*registeredHook();
}

}  // namespace detail
}  // namespace distlab::comm
