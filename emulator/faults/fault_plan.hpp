#pragma once
// FaultPlan: the faults of one scenario as seen by one rank, and the state of
// which have fired. The seams consult it:
//   - FaultBackend (fault_backend.hpp, layer kLayerFault) asks onCollective()
//     for every collective on the world group;
//   - FaultyStore (faulty_store.hpp) asks storeDead() / storeDelay();
//   - the training driver asks engineFault() at its own seams (skipped
//     backward, unused parameter, bit flip) and stepFault() for hang, crash and
//     straggler faults given with at_step.
//
// Triggers: at_seq = N fires on the world group's collective N; at_step = S
// fires on the first world collective issued during step S or later (for
// mismatch, skip, extra and store_death), or at the start of step S (hang,
// crash, straggler; the driver calls stepFault()). Each fault fires once,
// except a straggler, which delays `count` consecutive collectives.
// Firing is logged to the EventLog before the fault acts.
//
// Note [Point-to-point triggers]
// A fault with `on = "send"` or `on = "recv"` counts this rank's sends (or
// receives, from any source included) on the world group instead of its
// collectives, from 1, only those with `peer` when given: at_seq = N fires on
// the N-th of them (a straggler on `count` consecutive ones), at_step = S on
// the first one issued during step S or later (hang, crash and straggler too:
// such a fault waits for its operation, not for the step's start). A pipeline's
// stage can so hang, die or be slow in the middle of its send, or send a
// message of the wrong size or dtype, as a collective can.
// Thread-safe (one mutex; decisions are cheap).
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "emulator/faults/event_log.hpp"
#include "emulator/faults/fault_spec.hpp"
#include "runtime/tensor/tensor.hpp"

namespace distlab::emulator {

class FaultPlan {
 public:
  // Keeps only the faults that apply to `rank`. `hangCap` bounds a "forever"
  // hang (the runner kills the rank long before).
  FaultPlan(const std::vector<FaultSpec>& faults, int rank, std::shared_ptr<EventLog> log,
            std::chrono::milliseconds hangCap);

  int rank() const { return rank_; }
  EventLog& log() { return *log_; }

  // The backend-level fault that fires on world collective `seq` (nullptr: none).
  const FaultSpec* onCollective(uint64_t seq);
  // The fault that fires on this point-to-point operation (a send when
  // `isSend`, else a receive; `peer` -1 for a receive from any source).
  const FaultSpec* onPointToPoint(bool isSend, int peer);
  void setStep(int step);
  // Hang, crash or straggler faults given at_step that fire at the start of
  // `step`: those of this step, or of an earlier one a program's markers
  // skipped (emulator/program/program.hpp), each once.
  std::vector<const FaultSpec*> stepFaults(int step);
  // The start of training step `step`: setStep, the "step N" event, then acts
  // on stepFaults(step) (may not return: a crash, an endless hang).
  void beginStep(int step);
  // Engine faults of `kind` active at `step` (skip_backward, bit_flip fire once
  // at their step; unused_param and uneven_data are always active).
  const FaultSpec* engineFault(const std::string& kind, int step);

  // A bit_flip fault of `step`: flips its bit in the first element of the
  // first defined gradient of `params` (float32 / float64), and logs it.
  void applyGradientFaults(int step, const std::vector<Tensor>& params);

  bool storeDead() const;
  std::chrono::milliseconds storeDelay() const;

  // How long hang `f` lasts: its duration, or the hang cap for "forever".
  std::chrono::milliseconds hangLength(const FaultSpec& f) const;
  // Acts on hang / crash / straggler `f` (may not return for crash or an
  // endless hang).
  void act(const FaultSpec& f, uint64_t seq);
  // Logs "fault <kind> seq=<seq> step=<step> <detail>".
  void recordFired(const FaultSpec& f, uint64_t seq, const std::string& detail = "");

 private:
  // onCollective's decision under the lock; `storeDeath` is set when a
  // store_death fault fired (logged by the caller, outside the lock).
  const FaultSpec* decide(uint64_t seq, const FaultSpec*& storeDeath);

  struct Entry {
    FaultSpec spec;
    int firedCount = 0;
    uint64_t matched = 0;    // point-to-point operations counted so far
    uint64_t firstFired = 0; // the count at its first firing (at_step triggers)
  };
  // Whether point-to-point entry `e` fires on the operation just counted.
  bool firesOnPointToPoint(Entry& e);
  int rank_;
  std::shared_ptr<EventLog> log_;
  std::chrono::milliseconds hangCap_;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;  // GUARDED_BY(mutex_)
  int step_ = -1;               // GUARDED_BY(mutex_)
  bool storeDead_ = false;      // GUARDED_BY(mutex_)
};

// The process's plan (set by the scenario worker before the process group is
// created; nullptr when no scenario runs).
void setActiveFaultPlan(std::shared_ptr<FaultPlan> plan);
std::shared_ptr<FaultPlan> activeFaultPlan();

}  // namespace distlab::emulator
