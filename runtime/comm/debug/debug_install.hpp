#pragma once
// How the debug layer attaches to process groups.
//
// installDebugDecorators() (idempotent; initProcessGroup calls it) installs two
// backend decorators (backend_registry.hpp) applied to every group created
// from then on, by initProcessGroup, newGroup, newSubgroups and split:
//   "debug.wrapper" at kLayerDebug (outermost): ProcessGroupWrapper when the
//       debug level is DETAIL at the group's creation (TORCH_DISTRIBUTED_DEBUG,
//       or setDebugLevel() before creating the group); otherwise no wrapper;
//   "debug.monitor" at kLayerMonitor: first passes the group's read of the
//       environment (BackendContext::env: TORCH_FR_BUFFER_SIZE,
//       TORCH_FR_DUMP_TEMP_FILE, DISTLAB_WATCHDOG, ..._ASYNC_ERROR_HANDLING,
//       DISTLAB_FR_DUMP_SIGNAL) to configureFlightRecorder/configureWatchdog
//       (setters win), then adds MonitorBackend (flight recorder + watchdog)
//       unless both are off (buffer size 0 and the watchdog disabled).
// Fault injectors (kLayerFault) and link emulation sit inside both, so the
// flight recorder shows what the caller issued.
namespace distlab::comm {

void installDebugDecorators();
// Removes both decorators (tests); later groups get none.
void uninstallDebugDecorators();

}  // namespace distlab::comm
