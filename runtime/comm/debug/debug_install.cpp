#include "runtime/comm/debug/debug_install.hpp"

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/debug/monitor_backend.hpp"
#include "runtime/comm/debug/process_group_wrapper.hpp"
#include "runtime/comm/debug/watchdog.hpp"
#include "runtime/core/debug_level.hpp"

namespace distlab::comm {

void installDebugDecorators() {
  addBackendDecorator("debug.wrapper", kLayerDebug,
                      [](BackendPtr inner, const BackendContext& ctx) -> BackendPtr {
                        if (debugLevel() != DebugLevel::kDetail) return inner;
                        return std::make_shared<ProcessGroupWrapper>(std::move(inner), ctx);
                      });
  addBackendDecorator("debug.monitor", kLayerMonitor,
                      [](BackendPtr inner, const BackendContext& ctx) -> BackendPtr {
                        if (flightRecorderBufferSize() == 0 && !watchdogEnabled()) return inner;
                        return std::make_shared<MonitorBackend>(std::move(inner), ctx);
                      });
}

void uninstallDebugDecorators() {
  removeBackendDecorator("debug.wrapper");
  removeBackendDecorator("debug.monitor");
}

}  // namespace distlab::comm
