#pragma once
// MonitorBackend: the decorator (layer kLayerMonitor, just inside the DETAIL
// wrapper and outside fault injection) that records every operation in the
// group's flight recorder and hands it to the watchdog (Note [Watchdog]).
// It sees every operation the caller issued, including those a fault
// injector then hangs or drops. It also registers the rank's liveness record
// (liveness.hpp), so monitored barriers can tell dead ranks from stuck ones. Thread-safety: as the inner backend.
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

  WorkPtr broadcast(const Tensor& tensor, const BroadcastOptions& opts) override;
  WorkPtr allreduce(const Tensor& tensor, const AllreduceOptions& opts) override;
  WorkPtr allreduceCoalesced(const std::vector<Tensor>& tensors,
                             const AllreduceCoalescedOptions& opts) override;
  WorkPtr reduce(const Tensor& tensor, const ReduceOptions& opts) override;
  WorkPtr allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                    const AllgatherOptions& opts) override;
  WorkPtr allgatherIntoTensor(const Tensor& output, const Tensor& input,
                              const AllgatherOptions& opts) override;
  WorkPtr allgatherCoalesced(const std::vector<std::vector<Tensor>>& outputLists,
                             const std::vector<Tensor>& inputs,
                             const AllgatherOptions& opts) override;
  WorkPtr gather(const std::vector<Tensor>& outputs, const Tensor& input,
                 const GatherOptions& opts) override;
  WorkPtr scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                  const ScatterOptions& opts) override;
  WorkPtr reduceScatter(const Tensor& output, const std::vector<Tensor>& inputs,
                        const ReduceScatterOptions& opts) override;
  WorkPtr reduceScatterTensor(const Tensor& output, const Tensor& input,
                              const ReduceScatterOptions& opts) override;
  WorkPtr alltoall(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                   const AllToAllOptions& opts) override;
  WorkPtr alltoallBase(const Tensor& output, const Tensor& input,
                       const std::vector<int64_t>& outputSplits,
                       const std::vector<int64_t>& inputSplits,
                       const AllToAllOptions& opts) override;
  WorkPtr barrier(const BarrierOptions& opts) override;
  WorkPtr send(const Tensor& tensor, int dstRank, const SendOptions& opts) override;
  WorkPtr recv(const Tensor& tensor, int srcRank, const RecvOptions& opts) override;
  WorkPtr recvAnysource(const Tensor& tensor, const RecvOptions& opts) override;

 private:
  template <typename Options>
  Options extended(Options opts) const {
    if (extend_) opts.timeout += watchdogGrace(opts.timeout);
    return opts;
  }
  WorkPtr track(WorkPtr work, Milliseconds timeout, std::vector<int64_t> inputSplits = {},
                std::vector<int64_t> outputSplits = {});

  std::shared_ptr<Store> store_;
  std::string groupDesc_;
  int globalRank_;
  bool extend_;
  FlightRecorderPtr recorder_;
  std::shared_ptr<const RankNames> names_;  // for the watchdog (Note [Naming ranks])
};

}  // namespace distlab::comm
