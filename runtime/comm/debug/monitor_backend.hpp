#pragma once
// MonitorBackend: the decorator (layer kLayerMonitor, just inside the DETAIL
// wrapper and outside fault injection) that records every operation in the
// group's flight recorder and hands it to the watchdog (Note [Watchdog]).
// It sees every operation the caller issued, including those a fault
// injector then hangs or drops. It also registers the rank's liveness record
// (liveness.hpp), so monitored barriers can tell dead ranks from stuck ones.
// Thread-safety: as the inner backend.
#include <memory>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/debug/flight_recorder.hpp"
#include "runtime/comm/debug/watchdog.hpp"
#include "runtime/comm/forwarding_backend.hpp"

namespace distlab::comm {

inline constexpr int kLayerMonitor = kLayerDebug + 50;

class MonitorBackend : public ForwardingBackend {
 public:
  MonitorBackend(BackendPtr inner, const BackendContext& context);
  ~MonitorBackend() override;

  const FlightRecorderPtr& recorder() const { return recorder_; }

 protected:
  // Records `op` and hands its Work to the watchdog (the inner backend gets
  // the timeout plus the watchdog's grace, Note [Watchdog]).
  WorkPtr intercept(const Operation& op) override;

 private:
  WorkPtr track(WorkPtr work, const Operation& op);

  std::shared_ptr<Store> store_;
  std::string groupDesc_;
  int globalRank_;
  bool extend_;
  FlightRecorderPtr recorder_;
  std::shared_ptr<const RankNames> names_;  // for the watchdog (Note [Naming ranks])
};

}  // namespace distlab::comm
