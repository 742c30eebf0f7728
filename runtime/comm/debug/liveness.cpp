#include "runtime/comm/debug/liveness.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "runtime/core/clock.hpp"
#include "runtime/core/host_name.hpp"

namespace distlab::comm {
namespace {

std::string aliveKey(int globalRank) { return fmt::format("dbg/alive/{}", globalRank); }

int64_t wallMs() { return wallClockNowUs() / 1000; }

// One heartbeat thread per process (Note [Liveness records]). Leaked on
// purpose: a detached thread must not outlive its state at exit.
class Heartbeat {
 public:
  static Heartbeat& instance() {
    static Heartbeat* hb = new Heartbeat();
    return *hb;
  }

  void add(const std::shared_ptr<Store>& store, int rank, int groupSize) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& e = entries_[{store.get(), rank}];
    if (e.refs++ == 0) e.store = store;
    interval_ = std::max(interval_, heartbeatIntervalFor(groupSize));
    beat(*store, rank);
    // After fork() the child has the state but not the thread: restart it.
    if (threadPid_ != getpid()) {
      threadPid_ = getpid();
      std::thread([this] { loop(); }).detach();
    }
  }

  void remove(const Store* store, int rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find({store, rank});
    if (it != entries_.end() && --it->second.refs == 0) entries_.erase(it);
  }

 private:
  struct Entry {
    std::weak_ptr<Store> store;
    int refs = 0;
  };

  void beat(Store& store, int rank) {  // REQUIRES(mutex_)
    try {
      store.setString(aliveKey(rank), fmt::format("{} {} {} {}", hostName(), getpid(), wallMs(),
                                                  interval_.count()));
    } catch (const std::exception&) {
      // The store went away (shutdown): the record just stops being refreshed.
    }
  }

  void loop() {
    const pid_t me = getpid();
    std::unique_lock<std::mutex> lock(mutex_);
    while (threadPid_ == me) {
      cv_.wait_for(lock, interval_);
      for (auto& [key, e] : entries_) {
        if (auto s = e.store.lock()) beat(*s, key.second);
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::pair<const Store*, int>, Entry> entries_;
  std::chrono::milliseconds interval_ = kHeartbeatInterval;  // Note [Heartbeats that scale]
  pid_t threadPid_ = 0;
};

// 'R', 'S', 'Z', ... or 0 when the process does not exist.
char processState(long pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  if (!in) return 0;
  std::string line;
  std::getline(in, line);
  auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return 0;
  return line[close + 2];
}

}  // namespace

std::chrono::milliseconds heartbeatIntervalFor(int groupSize) {
  return std::min(kHeartbeatLongest, kHeartbeatInterval * std::max(1, groupSize / 16));
}

void registerLiveness(const std::shared_ptr<Store>& store, int globalRank, int groupSize) {
  Heartbeat::instance().add(store, globalRank, groupSize);
}

void unregisterLiveness(const Store* store, int globalRank) {
  Heartbeat::instance().remove(store, globalRank);
}

RankLiveness probeRank(Store& store, int globalRank) {
  const std::string key = aliveKey(globalRank);
  std::string host;
  long pid = 0;
  int64_t beatMs = 0;
  int64_t intervalMs = kHeartbeatInterval.count();  // records without one: the base interval
  try {
    if (!store.check({key})) {
      return {RankStatus::kUnknown, "unknown (it never registered with the debug layer)"};
    }
    std::istringstream in(store.getString(key));
    in >> host >> pid >> beatMs;
    if (int64_t written = 0; in >> written && written > 0) intervalMs = written;
  } catch (const std::exception& e) {
    return {RankStatus::kUnknown, fmt::format("unknown (store error: {})", e.what())};
  }
  const int64_t age = wallMs() - beatMs;
  if (host == hostName() && pid != getpid()) {
    const char state = processState(pid);
    if (state == 0 || state == 'Z' || state == 'X') {
      return {RankStatus::kDead, fmt::format("dead (pid {} on host {} has exited)", pid, host)};
    }
    return {RankStatus::kAlive,
            fmt::format("alive (pid {} on host {}, heartbeat {} ms ago)", pid, host, age)};
  }
  if (age > kStaleBeats * intervalMs) {
    return {RankStatus::kDead,
            fmt::format("dead (no heartbeat for {} ms; pid {} on host {})", age, pid, host)};
  }
  return {RankStatus::kAlive,
          fmt::format("alive (pid {} on host {}, heartbeat {} ms ago)", pid, host, age)};
}

}  // namespace distlab::comm
