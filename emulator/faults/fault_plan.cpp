#include "emulator/faults/fault_plan.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "runtime/core/clock.hpp"

namespace distlab::emulator {

namespace {

bool isBackendKind(const std::string& k) {
  return k == "hang" || k == "crash" || k == "straggler" || k == "mismatch" ||
         k == "skip_collective" || k == "extra_collective" || k == "store_death";
}
// Acted by the driver at the start of its step (a point-to-point one waits
// for its operation instead).
bool isStepActed(const FaultSpec& f) {
  return f.on.empty() && (f.kind == "hang" || f.kind == "crash" || f.kind == "straggler");
}

std::shared_ptr<FaultPlan>& activePlan() {
  static std::shared_ptr<FaultPlan> plan;
  return plan;
}

}  // namespace

void setActiveFaultPlan(std::shared_ptr<FaultPlan> plan) { activePlan() = std::move(plan); }
std::shared_ptr<FaultPlan> activeFaultPlan() { return activePlan(); }

FaultPlan::FaultPlan(const std::vector<FaultSpec>& faults, int rank,
                     std::shared_ptr<EventLog> log, std::chrono::milliseconds hangCap)
    : rank_(rank), log_(std::move(log)), hangCap_(hangCap) {
  for (const auto& f : faults) {
    if (std::find(f.ranks.begin(), f.ranks.end(), rank) != f.ranks.end()) {
      entries_.push_back(Entry{f, 0});
    }
  }
}

const FaultSpec* FaultPlan::onCollective(uint64_t seq) {
  const FaultSpec* storeDeath = nullptr;
  const FaultSpec* fired = decide(seq, storeDeath);
  if (storeDeath) recordFired(*storeDeath, seq, "store server stopped");
  return fired;
}

const FaultSpec* FaultPlan::decide(uint64_t seq, const FaultSpec*& storeDeath) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& e : entries_) {
    const auto& f = e.spec;
    if (!isBackendKind(f.kind) || !f.on.empty()) continue;
    if (f.atSeq > 0) {
      uint64_t last = f.atSeq + static_cast<uint64_t>(f.kind == "straggler" ? f.count : 1);
      if (seq < f.atSeq || seq >= last) continue;
    } else if (f.atStep >= 0) {
      if (isStepActed(f) || step_ < f.atStep || e.firedCount > 0) continue;
    } else {
      continue;
    }
    ++e.firedCount;
    if (f.kind == "store_death") {
      storeDead_ = true;
      storeDeath = &f;
      continue;  // the store fails from now on; the collective itself runs
    }
    return &f;
  }
  return nullptr;
}

const FaultSpec* FaultPlan::onPointToPoint(bool isSend, int peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  const FaultSpec* fired = nullptr;
  for (auto& e : entries_) {
    const FaultSpec& f = e.spec;
    if (f.on != (isSend ? "send" : "recv") || (f.peer >= 0 && f.peer != peer)) continue;
    ++e.matched;  // every matching entry counts, fired or not
    if (!fired && firesOnPointToPoint(e)) {
      ++e.firedCount;
      fired = &f;
    }
  }
  return fired;
}

bool FaultPlan::firesOnPointToPoint(Entry& e) {
  const FaultSpec& f = e.spec;
  uint64_t first = f.atSeq;
  if (f.atSeq == 0) {  // at_step: from the first operation of step S on
    if (e.firedCount == 0 && step_ >= f.atStep) e.firstFired = e.matched;
    first = e.firstFired;
    if (first == 0) return false;
  }
  const uint64_t span = static_cast<uint64_t>(f.kind == "straggler" ? f.count : 1);
  return e.matched >= first && e.matched < first + span;
}

void FaultPlan::setStep(int step) {
  std::lock_guard<std::mutex> lock(mutex_);
  step_ = step;
}

std::vector<const FaultSpec*> FaultPlan::stepFaults(int step) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const FaultSpec*> out;
  for (auto& e : entries_) {
    if (isStepActed(e.spec) && e.spec.atStep >= 0 && e.spec.atStep <= step &&
        e.firedCount == 0) {
      ++e.firedCount;
      out.push_back(&e.spec);
    }
  }
  return out;
}

void FaultPlan::applyGradientFaults(int step, const std::vector<Tensor>& params) {
  const FaultSpec* f = engineFault("bit_flip", step);
  if (!f) return;
  recordFired(*f, 0, fmt::format("bit {}", f->bit));
  for (const auto& p : params) {
    const Tensor& g = p.grad();
    if (!g.defined() || g.numel() == 0) continue;
    // A device gradient is flipped in a host copy and written back.
    Tensor host = g.device().isCpu() ? g : g.to(Device::cpu());
    auto* bytes = static_cast<uint8_t*>(host.rawData());
    const int b = f->bit % (static_cast<int>(g.elementSize()) * 8);
    bytes[b / 8] ^= static_cast<uint8_t>(1u << (b % 8));
    if (!host.isSame(g)) Tensor(g).copy_(host);
    return;
  }
}

void FaultPlan::beginStep(int step) {
  setStep(step);
  log_->write(fmt::format("step {}", step));
  for (const FaultSpec* f : stepFaults(step)) act(*f, 0);
}

const FaultSpec* FaultPlan::engineFault(const std::string& kind, int step) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& e : entries_) {
    if (e.spec.kind != kind) continue;
    if (e.spec.atStep < 0) return &e.spec;  // always active (unused_param, uneven_data)
    if (e.spec.atStep == step) {
      ++e.firedCount;
      return &e.spec;
    }
  }
  return nullptr;
}

bool FaultPlan::storeDead() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return storeDead_;
}

std::chrono::milliseconds FaultPlan::storeDelay() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& e : entries_) {
    if (e.spec.kind == "slow_store") {
      return std::chrono::milliseconds(static_cast<int64_t>(e.spec.delayMs));
    }
  }
  return std::chrono::milliseconds(0);
}

void FaultPlan::recordFired(const FaultSpec& f, uint64_t seq, const std::string& detail) {
  int step;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    step = step_;
  }
  log_->write(fmt::format("fault {} seq={} step={} {}", f.kind, seq, step, detail));
}

std::chrono::milliseconds FaultPlan::hangLength(const FaultSpec& f) const {
  if (f.durationS < 0) return hangCap_;
  return std::chrono::milliseconds(static_cast<int64_t>(f.durationS * 1000));
}

void FaultPlan::act(const FaultSpec& f, uint64_t seq) {
  if (f.kind == "crash") {
    recordFired(f, seq, f.crashMode);
    if (f.crashMode == "abort") std::abort();
    if (f.crashMode == "sigkill") ::kill(::getpid(), SIGKILL);
    ::_exit(f.exitCode);
  }
  if (f.kind == "hang") {
    recordFired(f, seq, f.durationS < 0 ? "forever" : fmt::format("{}s", f.durationS));
    const auto length = hangLength(f);
    // A hang is the fault itself; it is still bounded (hangCap) so that a rank
    // the runner failed to kill does not outlive the run forever.
    Deadline deadline = Deadline::after(length);
    while (!deadline.expired()) std::this_thread::sleep_for(std::min(
        deadline.remaining(), std::chrono::milliseconds(200)));
    if (f.durationS < 0) ::_exit(124);
    return;
  }
  if (f.kind == "straggler") {
    recordFired(f, seq, fmt::format("{}ms", f.delayMs));
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(f.delayMs * 1000)));
  }
}

}  // namespace distlab::emulator
