#pragma once
// Watchdog: one thread per process that watches every in-flight Work of the
// groups it monitors (PyTorch's NCCL watchdog, for every backend here;
// docs/pytorch-semantics.md, "Watchdog and error handling").
//
// Note [Watchdog]
// A Work still running past its timeout (measured from when it was issued)
// is reported at ERROR level as
//   "[Rank 1] Watchdog caught collective operation timeout: Work(SeqNum=3,
//    OpType=ALLREDUCE, NumelIn=10, NumelOut=10, Timeout(ms)=1000) ran for 1003
//    milliseconds before timing out."
// followed by "[PG <name> (<desc>) Rank 1] failure detected by watchdog at work
// sequence id: 3 PG status: last enqueued work: 3, last started work: 3, last
// completed work: 2" (in a subgroup "[Rank 1 of group 'g1' (global rank 3)]",
// Note [Naming ranks]) and any diagnosis a DETAIL wrapper registered (unmatched
// point-to-point). Then the flight recorder is dumped on this rank, the other
// ranks are asked to dump through the store (key "dbg/fr/dump_request"), and
// the error-handling mode decides the rest (TORCH_NCCL_ASYNC_ERROR_HANDLING,
// also DISTLAB_ASYNC_ERROR_HANDLING; WatchdogSettings::mode):
//   0 kNoHandling    report and dump only; the backend fails the Work later
//                    (at timeout + grace);
//   1 kTearDown      fail the Work with the report, abort the group, then end
//                    the process with exit code kWatchdogExitCode;
//   2 kCleanUpOnly   fail the Work with the report (DistTimeoutError, raised by
//                    wait() in the caller) and abort the group (default for
//                    distlab: the caller decides);
//   3 kSkipCleanUp   end the process without aborting (PyTorch's default for NCCL).
// To win the race with the backend's own timeout, the monitor decorator gives
// the inner backend the timeout plus watchdogGrace(timeout), in every mode (so
// in mode 0 the report always comes first and the backend's own error later).
// A Work that fails for another reason triggers an "error" dump here and a
// dump request to the other ranks.
// The thread also dumps on a signal (DISTLAB_FR_DUMP_SIGNAL: USR1, USR2
// (default) or OFF, installed when the thread starts; the handler only sets a
// flag) and when another rank asks through the store.
// Settings: process-wide (one thread watches every group). The monitor
// decorator passes each group's read of the environment to configureWatchdog()
// before the group's first operation (Note [Environment read once]); the
// setters win over it. Thread-safe.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "runtime/comm/backend.hpp"
#include "runtime/comm/debug/flight_recorder.hpp"
#include "runtime/comm/debug/rank_names.hpp"
#include "runtime/comm/store/store.hpp"
#include "runtime/comm/work.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab::comm {

enum class ErrorHandlingMode { kNoHandling = 0, kTearDown = 1, kCleanUpOnly = 2, kSkipCleanUp = 3 };

inline constexpr int kWatchdogExitCode = 86;

struct WatchdogSettings {
  bool enabled = true;                                       // DISTLAB_WATCHDOG
  ErrorHandlingMode mode = ErrorHandlingMode::kCleanUpOnly;  // ..._ASYNC_ERROR_HANDLING
  FrDumpSignal dumpSignal = FrDumpSignal::kUsr2;             // DISTLAB_FR_DUMP_SIGNAL
};
// Takes `settings` for every field no setter has set; the dump signal is
// installed when the thread (re)starts, so the first configuration before it
// decides it.
void configureWatchdog(const WatchdogSettings& settings);
ErrorHandlingMode errorHandlingMode();  // as set, configured, or kCleanUpOnly
void setErrorHandlingMode(ErrorHandlingMode mode);
// Whether the watchdog watches new groups (default on).
bool watchdogEnabled();
void setWatchdogEnabled(bool enabled);
// Extra time the inner backend gets: timeout / 2 clamped to [500 ms, 10 s].
Milliseconds watchdogGrace(Milliseconds timeout);

// What the watchdog needs to know about one Work.
struct WatchedWork {
  WorkPtr work;
  FlightRecorderPtr recorder;      // may be null (recording disabled)
  uint64_t recordId = 0;
  std::weak_ptr<Backend> backend;  // aborted in modes 1 and 2
  std::weak_ptr<Store> store;      // for the dump request to the other ranks
  Milliseconds timeout{0};         // the caller's timeout
  std::string groupDesc;
  int globalRank = -1;
  // The group's rank names (Note [Naming ranks]); null: "Rank <group rank>".
  std::shared_ptr<const RankNames> names;
};

// Starts the thread (and its signal handler) if needed and listens for dump
// requests on `store` (at a pace that follows `groupSize`, its group's ranks).
// Called when a monitored group is created, so a rank that never issues an
// operation still dumps when a peer asks.
void startWatchdog(const std::shared_ptr<Store>& store, int groupSize);

// Starts watching (the thread starts on first use). Adds an observer that
// keeps the flight recorder entry up to date.
void watchWork(WatchedWork watched);

// A DETAIL wrapper's extra diagnosis for timeouts in its group (keyed by group
// name and global rank); removed with the same key.
using TimeoutDiagnoser = std::function<std::string()>;
void setTimeoutDiagnoser(const std::string& groupName, int globalRank, TimeoutDiagnoser fn);
void clearTimeoutDiagnoser(const std::string& groupName, int globalRank);

// The watchdog's timeout line for `info` (exposed for tests and other backends).
std::string watchdogTimeoutMessage(const WorkInfo& info, Milliseconds timeout, int64_t ranForMs);

// Asks every rank sharing `store` to dump its flight recorder.
void requestFlightRecorderDumps(Store& store, const std::string& reason);

}  // namespace distlab::comm
