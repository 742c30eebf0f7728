#pragma once
// LinkBackend: the link-emulation decorator (layer kLayerLink). Each operation
// runs on the inner backend as usual; its Work completes no earlier than the
// alpha-beta model says (link_model.hpp).
//
// Note [Link emulation without CPU]
// The delay is a timer, not a sleep on the progress thread and not a spin: the
// inner operation completes, and a single process-wide timer thread completes
// the outer Work at the modelled time. The link is a FIFO resource: an
// operation starts when it is issued or when the previous one on this backend
// ends, whichever is later, so back-to-back buckets queue like on a real link.
// Completion time = max(inner completion, modelled end). Compute on the
// calling thread therefore overlaps with emulated communication even on a
// 2-core machine, which is what overlap experiments need.
//
// Errors are not delayed: a failed inner Work fails the outer Work at once.
// Thread-safety: as Backend (issue is serialised by ProcessGroup).
#include <chrono>
#include <functional>
#include <mutex>

#include "emulator/link/link_model.hpp"
#include "runtime/comm/forwarding_backend.hpp"

namespace distlab::emulator {

class LinkBackend : public comm::ForwardingBackend {
 public:
  LinkBackend(comm::BackendPtr inner, LinkModel model);

  const LinkModel& model() const { return model_; }

  comm::WorkPtr broadcast(const Tensor& t, const comm::BroadcastOptions& o) override;
  comm::WorkPtr allreduce(const Tensor& t, const comm::AllreduceOptions& o) override;
  comm::WorkPtr allreduceCoalesced(const std::vector<Tensor>& ts,
                                   const comm::AllreduceCoalescedOptions& o) override;
  comm::WorkPtr reduce(const Tensor& t, const comm::ReduceOptions& o) override;
  comm::WorkPtr allgather(const std::vector<Tensor>& outs, const Tensor& in,
                          const comm::AllgatherOptions& o) override;
  comm::WorkPtr allgatherIntoTensor(const Tensor& out, const Tensor& in,
                                    const comm::AllgatherOptions& o) override;
  comm::WorkPtr gather(const std::vector<Tensor>& outs, const Tensor& in,
                       const comm::GatherOptions& o) override;
  comm::WorkPtr scatter(const Tensor& out, const std::vector<Tensor>& ins,
                        const comm::ScatterOptions& o) override;
  comm::WorkPtr reduceScatter(const Tensor& out, const std::vector<Tensor>& ins,
                              const comm::ReduceScatterOptions& o) override;
  comm::WorkPtr reduceScatterTensor(const Tensor& out, const Tensor& in,
                                    const comm::ReduceScatterOptions& o) override;
  comm::WorkPtr alltoall(const std::vector<Tensor>& outs, const std::vector<Tensor>& ins,
                         const comm::AllToAllOptions& o) override;
  comm::WorkPtr alltoallBase(const Tensor& out, const Tensor& in,
                             const std::vector<int64_t>& outSplits,
                             const std::vector<int64_t>& inSplits,
                             const comm::AllToAllOptions& o) override;
  comm::WorkPtr barrier(const comm::BarrierOptions& o) override;
  comm::WorkPtr send(const Tensor& t, int dst, const comm::SendOptions& o) override;
  comm::WorkPtr recv(const Tensor& t, int src, const comm::RecvOptions& o) override;

 private:
  // Wraps `inner` in a Work that completes at the modelled time.
  comm::WorkPtr delay(comm::WorkPtr inner, comm::OpType op, int64_t bytes,
                      std::vector<Tensor> outputs);

  LinkModel model_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point linkFreeAt_{};  // GUARDED_BY(mutex_)
};

// Runs callbacks at given times on one process-wide thread (never blocks the
// caller). Callbacks must be short. Exposed for tests.
void scheduleAt(std::chrono::steady_clock::time_point when, std::function<void()> fn);

// Installs LinkBackend for every group created from now on (kLayerLink).
// A disabled model removes the decorator.
void installLinkEmulation(const LinkModel& model);

}  // namespace distlab::emulator
