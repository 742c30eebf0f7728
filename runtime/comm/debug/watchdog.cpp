#include "runtime/comm/debug/watchdog.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "runtime/core/clock.hpp"
#include "runtime/core/current_pid.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm {
namespace {

// Note [Dump requests polled at a pace that scales]: every look for a peer's
// dump request is a store request, so a process looks at most once per
// interval (not on every operation it watches), and the interval grows with
// the largest group it watches: 200 ms up to 16 ranks, then in proportion, at
// most 4 s. A thousand ranks looking five times a second kept the store
// server's core busy.
constexpr std::chrono::milliseconds kPollInterval{200};
constexpr std::chrono::milliseconds kLongestPollInterval{4000};
const char* const kDumpRequestKey = "dbg/fr/dump_request";

std::atomic<bool> gSignalDump{false};
void onDumpSignal(int) { gSignalDump.store(true); }

struct Settings {
  std::mutex mutex;
  bool modeSet = false, enabledSet = false;  // by a setter: configureWatchdog keeps them
  ErrorHandlingMode mode = ErrorHandlingMode::kCleanUpOnly;
  bool enabled = true;
  FrDumpSignal dumpSignal = FrDumpSignal::kUsr2;
};
Settings& settings() {
  static Settings* s = new Settings();
  return *s;
}

std::string errorText(const Work& work) {
  auto ex = work.exception();
  if (!ex) return "";
  try {
    std::rethrow_exception(ex);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

class WatchdogThread {
 public:
  static WatchdogThread& instance() {
    static WatchdogThread* w = new WatchdogThread();
    return *w;
  }

  void add(WatchedWork watched);
  void attach(const std::shared_ptr<Store>& store, int groupSize);
  void completed(const Work& work);
  void setDiagnoser(const std::string& g, int r, TimeoutDiagnoser fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fn) {
      diagnosers_[{g, r}] = std::move(fn);
    } else {
      diagnosers_.erase({g, r});
    }
  }
  void noteOwnRequest(const Store* store, const std::string& value) {
    std::lock_guard<std::mutex> lock(mutex_);
    lastRequest_[store] = value;
  }

 private:
  struct Entry {
    WatchedWork w;
    Clock::time_point deadline;
    bool handled = false;
  };

  void ensureThread();                                   // REQUIRES(mutex_)
  void registerStore(const std::weak_ptr<Store>& store);  // REQUIRES(mutex_)
  void loop();
  void handleTimeout(const Entry& e);
  void pollRequests();
  void requestPeerDumps(const std::string& reason);
  std::string diagnosis(const std::string& g, int r);

  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<const Work*, Entry> inflight_;                            // GUARDED_BY(mutex_)
  std::vector<std::string> errors_;                                  // GUARDED_BY(mutex_)
  std::map<std::pair<std::string, int>, TimeoutDiagnoser> diagnosers_;  // GUARDED_BY(mutex_)
  std::vector<std::weak_ptr<Store>> stores_;                          // GUARDED_BY(mutex_)
  std::map<const Store*, std::string> lastRequest_;                   // GUARDED_BY(mutex_)
  bool changed_ = false;                                              // GUARDED_BY(mutex_)
  std::chrono::milliseconds pollInterval_ = kPollInterval;            // GUARDED_BY(mutex_)
  Clock::time_point lastPoll_{};  // the loop's last pollRequests (thread only)
  Clock::time_point nextWake_{};                                      // GUARDED_BY(mutex_)
  pid_t threadPid_ = 0;
};

class WatchObserver : public WorkObserver {
 public:
  WatchObserver(FlightRecorderPtr fr, uint64_t id) : fr_(std::move(fr)), id_(id) {}
  void onStarted(const Work&) override {
    if (fr_) fr_->markStarted(id_);
  }
  void onCompleted(const Work& work) override {
    if (fr_) {
      const bool ok = work.isSuccess();
      fr_->markCompleted(id_, ok, ok ? std::string() : errorText(work));
    }
    WatchdogThread::instance().completed(work);
  }

 private:
  FlightRecorderPtr fr_;
  uint64_t id_;
};

void WatchdogThread::ensureThread() {
  // Every monitored operation asks: currentPid() is no system call.
  if (threadPid_ == currentPid()) return;
  threadPid_ = currentPid();  // after fork() the child restarts the thread
  FrDumpSignal sig;
  {
    Settings& st = settings();
    std::lock_guard<std::mutex> lock(st.mutex);
    sig = st.dumpSignal;
  }
  if (sig != FrDumpSignal::kOff) {
    std::signal(sig == FrDumpSignal::kUsr1 ? SIGUSR1 : SIGUSR2, onDumpSignal);
  }
  std::thread([this] { loop(); }).detach();
}

void WatchdogThread::attach(const std::shared_ptr<Store>& s, int groupSize) {
  std::lock_guard<std::mutex> lock(mutex_);
  pollInterval_ = std::max(pollInterval_, std::min(kLongestPollInterval,
                                                   kPollInterval * std::max(1, groupSize / 16)));
  ensureThread();
  if (s) registerStore(s);
}

void WatchdogThread::registerStore(const std::weak_ptr<Store>& store) {
  // Called for every monitored operation: a known store is found by owner,
  // without locking a weak_ptr (two atomic updates each).
  const auto sameOwner = [&](const std::weak_ptr<Store>& w) {
    return !w.owner_before(store) && !store.owner_before(w);
  };
  if (std::any_of(stores_.begin(), stores_.end(), sameOwner)) return;
  const std::shared_ptr<Store> s = store.lock();
  if (!s) return;
  stores_.push_back(s);
  try {
    lastRequest_[s.get()] = s->check({kDumpRequestKey}) ? s->getString(kDumpRequestKey) : "";
  } catch (const std::exception&) {
  }
}

// Note [Watching a finished Work]
// A blocking operation that ran inline has finished before the monitor hands
// it over. Nothing is left to watch, so it gets no map entry and no observer:
// the flight-recorder updates and the completion handling that the observer's
// replay would make are made here directly, in the same order: the entry is
// started and completed under one lock (markFinished), and only a failure is
// passed on to completed() (a success has nothing to report).
void WatchdogThread::add(WatchedWork watched) {
  WorkPtr work = watched.work;
  const WorkState state = work->state();
  if (state == WorkState::kCompleted || state == WorkState::kFailed) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ensureThread();
      registerStore(watched.store);
    }
    const bool ok = state == WorkState::kCompleted;
    if (watched.recorder) {
      watched.recorder->markFinished(watched.recordId, ok, ok ? "" : errorText(*work));
    }
    if (!ok) completed(*work);  // a success has nothing to report and no map entry
    return;
  }
  auto observer = std::make_shared<WatchObserver>(watched.recorder, watched.recordId);
  bool notify = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ensureThread();
    registerStore(watched.store);
    Entry e{std::move(watched), {}, false};
    e.deadline = Clock::now() + e.w.timeout;
    notify = e.deadline < nextWake_;
    changed_ |= notify;
    if (watchdogEnabled()) inflight_[work.get()] = std::move(e);
  }
  if (notify) cv_.notify_all();
  work->addObserver(std::move(observer));  // may complete the entry at once
}

void WatchdogThread::completed(const Work& work) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = inflight_.find(&work);
  const bool byWatchdog = it != inflight_.end() && it->second.handled;
  if (it != inflight_.end()) inflight_.erase(it);
  if (!work.isSuccess() && !byWatchdog) {
    errors_.push_back(fmt::format("{} failed: {}", work.info().describe(), errorText(work)));
    cv_.notify_all();
  }
}

std::string WatchdogThread::diagnosis(const std::string& g, int r) {
  TimeoutDiagnoser fn;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = diagnosers_.find({g, r});
    if (it != diagnosers_.end()) fn = it->second;
  }
  try {
    return fn ? fn() : "";
  } catch (const std::exception& e) {
    return fmt::format("(diagnosis failed: {})", e.what());
  }
}

void WatchdogThread::handleTimeout(const Entry& e) {
  const WorkInfo& info = e.w.work->info();
  const int64_t ranMs = (monotonicNowNs() - e.w.work->scheduledNs()) / 1000000;
  const std::string me =
      e.w.names ? e.w.names->name(info.rank, true) : fmt::format("Rank {}", info.rank);
  std::string msg =
      fmt::format("[{}] {}", me, watchdogTimeoutMessage(info, e.w.timeout, ranMs));
  const GroupStatus st = e.w.recorder ? e.w.recorder->status() : GroupStatus{};
  msg += fmt::format(
      "\n[PG {} ({}) {}] failure detected by watchdog at work sequence id: {} PG status: "
      "last enqueued work: {}, last started work: {}, last completed work: {}",
      info.groupName, e.w.groupDesc, me, info.seq, st.lastEnqueued, st.lastStarted,
      st.lastCompleted);
  const std::string diag = diagnosis(info.groupName, e.w.globalRank);
  if (!diag.empty()) msg += "\n" + diag;
  DL_LOG(ERROR, "{}", msg);
  if (e.w.recorder) e.w.recorder->markTimedOut(e.w.recordId);
  dumpFlightRecorders("timeout", msg);
  if (auto s = e.w.store.lock()) {
    try {
      requestFlightRecorderDumps(*s, msg);
    } catch (const std::exception&) {
    }
  }
  const ErrorHandlingMode mode = errorHandlingMode();
  if (mode == ErrorHandlingMode::kNoHandling) return;
  if (mode != ErrorHandlingMode::kSkipCleanUp) {
    // Backend::announceTimeout: peers are told before the caller can exit.
    auto b = e.w.backend.lock();
    if (b) b->announceTimeout(msg);
    e.w.work->abort(std::make_exception_ptr(DistTimeoutError(msg)));
    if (b) b->abortAfterTimeout(msg);
  }
  if (mode == ErrorHandlingMode::kTearDown || mode == ErrorHandlingMode::kSkipCleanUp) {
    std::fprintf(stderr, "%s\nTearing down the process (exit code %d).\n", msg.c_str(),
                 kWatchdogExitCode);
    std::fflush(stderr);
    settleFlightRecorderDumps();  // a failing caller may be dumping too
    std::_Exit(kWatchdogExitCode);
  }
}

void WatchdogThread::requestPeerDumps(const std::string& reason) {
  std::vector<std::shared_ptr<Store>> stores;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& w : stores_) {
      if (auto s = w.lock()) stores.push_back(s);
    }
  }
  for (auto& s : stores) {
    try {
      requestFlightRecorderDumps(*s, reason);
    } catch (const std::exception&) {
    }
  }
}

void WatchdogThread::pollRequests() {
  std::vector<std::shared_ptr<Store>> stores;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(stores_, [](const auto& w) { return w.expired(); });
    for (auto& w : stores_) {
      if (auto s = w.lock()) stores.push_back(s);
    }
  }
  for (auto& s : stores) {
    std::string value;
    try {
      if (!s->check({kDumpRequestKey})) continue;
      value = s->getString(kDumpRequestKey);
    } catch (const std::exception&) {
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (lastRequest_[s.get()] == value) continue;
      lastRequest_[s.get()] = value;
    }
    dumpFlightRecorders("peer", value);
  }
}

void WatchdogThread::loop() {
  const pid_t me = currentPid();
  std::unique_lock<std::mutex> lock(mutex_);
  while (threadPid_ == me) {
    auto wake = Clock::now() + pollInterval_;
    for (auto& [w, e] : inflight_) {
      if (!e.handled) wake = std::min(wake, e.deadline);
    }
    nextWake_ = wake;
    cv_.wait_until(lock, wake,
                   [&] { return changed_ || !errors_.empty() || gSignalDump.load(); });
    changed_ = false;
    const auto interval = pollInterval_;
    std::vector<Entry> expired;
    const auto now = Clock::now();
    for (auto& [w, e] : inflight_) {
      if (!e.handled && now >= e.deadline && !e.w.work->isCompleted()) {
        e.handled = true;
        expired.push_back(e);
      }
    }
    std::vector<std::string> errors = std::move(errors_);
    errors_.clear();
    lock.unlock();
    for (const auto& e : expired) handleTimeout(e);
    if (!errors.empty()) {
      dumpFlightRecorders("error", errors.front());
      requestPeerDumps(errors.front());
    }
    if (gSignalDump.exchange(false)) dumpFlightRecorders("signal", "dump signal received");
    if (now - lastPoll_ >= interval) {
      pollRequests();
      lastPoll_ = Clock::now();
    }
    lock.lock();
  }
}

}  // namespace

void configureWatchdog(const WatchdogSettings& settingsIn) {
  Settings& s = settings();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.modeSet) s.mode = settingsIn.mode;
  if (!s.enabledSet) s.enabled = settingsIn.enabled;
  s.dumpSignal = settingsIn.dumpSignal;
}

ErrorHandlingMode errorHandlingMode() {
  Settings& s = settings();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.mode;
}

void setErrorHandlingMode(ErrorHandlingMode mode) {
  Settings& s = settings();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.mode = mode;
  s.modeSet = true;
}

bool watchdogEnabled() {
  Settings& s = settings();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.enabled;
}

void setWatchdogEnabled(bool enabled) {
  Settings& s = settings();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.enabled = enabled;
  s.enabledSet = true;
}

Milliseconds watchdogGrace(Milliseconds timeout) {
  return std::clamp(timeout / 2, Milliseconds(500), Milliseconds(10000));
}

void watchWork(WatchedWork watched) { WatchdogThread::instance().add(std::move(watched)); }

void startWatchdog(const std::shared_ptr<Store>& store, int groupSize) {
  WatchdogThread::instance().attach(store, groupSize);
}

void setTimeoutDiagnoser(const std::string& groupName, int globalRank, TimeoutDiagnoser fn) {
  WatchdogThread::instance().setDiagnoser(groupName, globalRank, std::move(fn));
}

void clearTimeoutDiagnoser(const std::string& groupName, int globalRank) {
  WatchdogThread::instance().setDiagnoser(groupName, globalRank, nullptr);
}

std::string watchdogTimeoutMessage(const WorkInfo& info, Milliseconds timeout, int64_t ranForMs) {
  return fmt::format(
      "Watchdog caught collective operation timeout: Work(SeqNum={}, OpType={}, NumelIn={}, "
      "NumelOut={}, Timeout(ms)={}) ran for {} milliseconds before timing out.",
      info.seq, opTypeName(info.opType), info.numelIn, info.numelOut, timeout.count(), ranForMs);
}

void requestFlightRecorderDumps(Store& store, const std::string& reason) {
  const std::string value = fmt::format("{} {}: {}", getpid(), monotonicNowNs(), reason);
  WatchdogThread::instance().noteOwnRequest(&store, value);
  store.setString(kDumpRequestKey, value);
}

}  // namespace distlab::comm
