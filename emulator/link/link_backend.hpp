#pragma once
// LinkBackend: the link-emulation decorator (layer kLayerLink). Each operation
// -- every collective, send, recv and recv from any source -- runs on the
// inner backend as usual; its Work completes no earlier than the alpha-beta
// model says (link_model.hpp).
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
// Note [Messages on emulated links]
// A message's transfer cannot begin before both sides have joined: a receive
// posted early waits for its sender, a rendezvous send for its receiver. A
// rank does not see when its peer joined; the inner operation's completion is
// the first sign of it (the data arrived, or the receiver read it in place),
// so a send or receive completes no earlier than that moment plus the
// modelled time, besides no earlier than the link's FIFO says. The replay
// starts a message when both sides have issued it (emulator/predict); this
// keeps the two in step when one side is late. Left as they are: the real
// copy's time is counted before the modelled one (microseconds against the
// milliseconds of an emulated link), the FIFO is not pushed back by a late
// message, and a small send the shm backend buffers completes before its
// receiver posts (eager), so a late receiver delays only its own side.
//
// Errors are not delayed: a failed inner Work fails the outer Work at once.
// Thread-safety: as Backend (issue is serialised by ProcessGroup).
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "emulator/link/collective_cost.hpp"
#include "emulator/link/link_model.hpp"
#include "runtime/comm/forwarding_backend.hpp"

namespace distlab::emulator {

// With a NetworkModel (a topology, Note [Topology model]) instead of one flat
// link, an operation takes the network model's time for its group's
// placement (rank r on node r / ranks_per_node; collective_cost.hpp), the
// same figure `distlab predict` uses for it: one model drives both.
class LinkBackend : public comm::ForwardingBackend {
 public:
  LinkBackend(comm::BackendPtr inner, LinkModel model);
  // `globalRanks`: the group's ranks in the job (BackendContext::globalRanks).
  LinkBackend(comm::BackendPtr inner, NetworkModel network, std::vector<int> globalRanks);

  const LinkModel& model() const { return model_; }
  // The modelled seconds of `op` moving `bytes` (the nccl-tests size; `peer`:
  // the group rank of a send/recv's other side).
  double modelledSeconds(comm::OpType op, int64_t bytes, int peer) const;

 protected:
  comm::WorkPtr intercept(const comm::Operation& op) override;

 private:
  // Wraps `inner` in a Work that completes at the modelled time.
  comm::WorkPtr delay(comm::WorkPtr inner, comm::OpType op, int64_t bytes,
                      std::vector<Tensor> outputs);
  // The bytes the model charges for `op`, per LinkModel's conventions.
  int64_t modelledBytes(const comm::Operation& op) const;

  LinkModel model_;
  std::optional<NetworkModel> network_;
  std::vector<int> globalRanks_;
  GroupShape shape_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point linkFreeAt_{};  // GUARDED_BY(mutex_)
};

// Runs callbacks at given times on one process-wide thread (never blocks the
// caller). Callbacks must be short. Exposed for tests.
void scheduleAt(std::chrono::steady_clock::time_point when, std::function<void()> fn);

// Installs LinkBackend for every group created from now on (kLayerLink).
// A disabled model removes the decorator.
void installLinkEmulation(const LinkModel& model);
// The same with the network model of a topology.
void installNetworkEmulation(const NetworkModel& network);

}  // namespace distlab::emulator
