#pragma once
// How the debug layer attaches to process groups.
//
// installDebugDecorators() (idempotent; initProcessGroup calls it) installs two
// backend decorators (backend_registry.hpp) applied to every group created
// from then on, by initProcessGroup, newGroup, newSubgroups and split:
//   "debug.wrapper" at kLayerDebug (outermost): ProcessGroupWrapper when the
//       debug level is DETAIL at the group's creation (TORCH_DISTRIBUTED_DEBUG,
//       or setDebugLevel() before creating the group); otherwise no wrapper;
//   "debug.monitor" at kLayerMonitor: MonitorBackend (flight recorder +
//       watchdog) unless both are off (TORCH_FR_BUFFER_SIZE=0 and
//       DISTLAB_WATCHDOG=0).
// Fault injectors (kLayerFault) and link emulation sit inside both, so the
// flight recorder shows what the caller issued.
namespace distlab::comm {

void installDebugDecorators();
// Removes both decorators (tests); later groups get none.
void uninstallDebugDecorators();

}  // namespace distlab::comm
