#include "runtime/comm/debug/debug_install.hpp"

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/debug/monitor_backend.hpp"
#include "runtime/comm/debug/process_group_wrapper.hpp"
#include "runtime/comm/debug/watchdog.hpp"
#include "runtime/core/debug_level.hpp"

namespace distlab::comm {
namespace {

// The monitor's process-wide settings from a group's read of the environment
// (Note [Environment read once]).
FlightRecorderSettings recorderSettingsFromEnv(const RuntimeEnv& env) {
  FlightRecorderSettings s;
  s.bufferSize = static_cast<size_t>(env.frBufferSize);
  s.dumpPrefix = env.frDumpPrefix;
  return s;
}

WatchdogSettings watchdogSettingsFromEnv(const RuntimeEnv& env) {
  WatchdogSettings s;
  s.enabled = env.watchdog;
  s.mode = static_cast<ErrorHandlingMode>(env.asyncErrorHandling);
  s.dumpSignal = env.frDumpSignal;
  return s;
}

}  // namespace

void installDebugDecorators() {
  addBackendDecorator("debug.wrapper", kLayerDebug,
                      [](BackendPtr inner, const BackendContext& ctx) -> BackendPtr {
                        if (debugLevel() != DebugLevel::kDetail) return inner;
                        return std::make_shared<ProcessGroupWrapper>(std::move(inner), ctx);
                      });
  addBackendDecorator("debug.monitor", kLayerMonitor,
                      [](BackendPtr inner, const BackendContext& ctx) -> BackendPtr {
                        configureFlightRecorder(recorderSettingsFromEnv(ctx.env));
                        configureWatchdog(watchdogSettingsFromEnv(ctx.env));
                        if (flightRecorderBufferSize() == 0 && !watchdogEnabled()) return inner;
                        return std::make_shared<MonitorBackend>(std::move(inner), ctx);
                      });
}

void uninstallDebugDecorators() {
  removeBackendDecorator("debug.wrapper");
  removeBackendDecorator("debug.monitor");
}

}  // namespace distlab::comm
