#include "runtime/comm/debug/flight_recorder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "runtime/comm/op_names.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/host_name.hpp"
#include "runtime/core/logging.hpp"

namespace distlab::comm {
namespace {

using nlohmann::json;

int64_t wallNs() { return wallClockNowUs() * 1000; }

json nsOrNull(int64_t ns) { return ns == 0 ? json(nullptr) : json(ns); }

json entryJson(const FlightRecorder& fr, const FlightRecorderEntry& e) {
  json dtIn = json::array(), dtOut = json::array();
  for (size_t i = 0; i < e.inputs.size(); ++i) dtIn.push_back(dtypeName(e.inputs.dtype(i)));
  for (size_t i = 0; i < e.outputs.size(); ++i) dtOut.push_back(dtypeName(e.outputs.dtype(i)));
  const bool done = e.state == WorkState::kCompleted || e.state == WorkState::kFailed;
  return json{
      {"record_id", e.recordId},
      {"pg_id", fr.groupName()},
      {"process_group", json::array({fr.groupName(), fr.groupDesc()})},
      {"collective_seq_id", e.isP2P ? 0 : e.seq},
      {"p2p_seq_id", e.isP2P ? e.seq : 0},
      {"op_id", e.opId},
      {"profiling_name", fmt::format("{}:{}", fr.backendName(), profilingName(e.opType))},
      {"op_type", std::string(opTypeName(e.opType))},
      {"time_created_ns", e.createdNs},
      {"input_sizes", e.inputs.shapes()},
      {"input_dtypes", dtIn},
      {"output_sizes", e.outputs.shapes()},
      {"output_dtypes", dtOut},
      {"state", std::string(workStateName(e.state))},
      {"time_discovered_started_ns", nsOrNull(e.startedNs)},
      {"time_discovered_completed_ns", nsOrNull(e.completedNs)},
      {"duration_ms", done && e.startedNs ? json((e.completedNs - e.startedNs) / 1e6) : json()},
      {"retired", done},
      {"timeout_ms", e.timeoutMs},
      {"is_p2p", e.isP2P},
      {"peer", e.peer},
      {"tag", e.tag},
      {"reduce_op", e.reduceOp},
      {"input_splits", e.inputSplits},
      {"output_splits", e.outputSplits},
      {"timed_out", e.timedOut},
      {"error", e.error},
  };
}

struct Config {
  std::mutex mutex;
  bool sizeSet = false;  // by setFlightRecorderBufferSize: configure keeps it
  size_t size = kDefaultFlightRecorderBufferSize;
  bool prefixSet = false;  // by setFlightRecorderDumpPrefix
  std::string prefix = kDefaultFrDumpPrefix;
};

Config& config() {
  static Config* c = new Config();
  return *c;
}

struct Registry {
  std::mutex mutex;
  std::vector<std::weak_ptr<FlightRecorder>> recorders;
  std::atomic<uint64_t> nextRecordId{1};
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

std::vector<FlightRecorderPtr> liveRecorders() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<FlightRecorderPtr> out;
  std::erase_if(r.recorders, [](const auto& w) { return w.expired(); });
  for (auto& w : r.recorders) {
    if (auto p = w.lock()) out.push_back(p);
  }
  return out;
}

}  // namespace

FlightRecorder::FlightRecorder(std::string groupName, std::string groupDesc,
                               std::vector<int> globalRanks, int rank, std::string backendName,
                               size_t capacity)
    : groupName_(std::move(groupName)),
      groupDesc_(std::move(groupDesc)),
      globalRanks_(std::move(globalRanks)),
      rank_(rank),
      backendName_(std::move(backendName)),
      capacity_(capacity) {}

uint64_t FlightRecorder::record(const WorkInfo& info, Milliseconds timeout,
                                std::vector<int64_t> inputSplits,
                                std::vector<int64_t> outputSplits) {
  if (capacity_ == 0) return 0;
  const uint64_t recordId = registry().nextRecordId.fetch_add(1);
  const int64_t createdNs = wallNs();
  std::lock_guard<std::mutex> lock(mutex_);
  if (ring_.size() < capacity_) ring_.emplace_back();  // grows once, then reused
  FlightRecorderEntry& e = ring_[next_];
  next_ = (next_ + 1) % capacity_;
  // Every field is assigned (the slot may hold an old entry); assignment keeps
  // the vectors' storage (Note [Flight recorder ring]).
  e.recordId = recordId;
  e.opId = ++nextOpId_;
  e.opType = info.opType;
  e.seq = info.seq;
  e.isP2P = isPointToPoint(info.opType);
  e.peer = info.peer;
  e.tag = info.tag;
  e.reduceOp = info.reduceOp;
  e.inputs = info.inputs;
  e.outputs = info.outputs;
  e.inputSplits.assign(inputSplits.begin(), inputSplits.end());
  e.outputSplits.assign(outputSplits.begin(), outputSplits.end());
  e.state = WorkState::kScheduled;
  e.createdNs = createdNs;
  e.startedNs = e.completedNs = 0;
  e.timeoutMs = timeout.count();
  e.timedOut = false;
  e.error.clear();
  if (!e.isP2P) status_.lastEnqueued = std::max(status_.lastEnqueued, e.seq);
  return recordId;
}

size_t FlightRecorder::oldest() const { return ring_.size() < capacity_ ? 0 : next_; }

FlightRecorderEntry* FlightRecorder::find(uint64_t recordId) {
  // Newest first: the entries a Work updates are almost always the last few.
  for (size_t i = 0; i < ring_.size(); ++i) {
    FlightRecorderEntry& e = ring_[(next_ + ring_.size() - 1 - i) % ring_.size()];
    if (e.recordId == recordId) return &e;
  }
  return nullptr;
}

void FlightRecorder::markStarted(uint64_t recordId) {
  std::lock_guard<std::mutex> lock(mutex_);
  FlightRecorderEntry* e = find(recordId);
  if (!e || e->startedNs) return;
  e->startedNs = wallNs();
  if (e->state == WorkState::kScheduled) e->state = WorkState::kStarted;
  if (!e->isP2P) status_.lastStarted = std::max(status_.lastStarted, e->seq);
}

void FlightRecorder::markCompleted(uint64_t recordId, bool success, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  completeLocked(recordId, success, error, false);
}

void FlightRecorder::markFinished(uint64_t recordId, bool success, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  completeLocked(recordId, success, error, true);
}

void FlightRecorder::completeLocked(uint64_t recordId, bool success, const std::string& error,
                                    bool countStart) {
  FlightRecorderEntry* e = find(recordId);
  if (!e || e->completedNs) return;
  e->completedNs = wallNs();
  if (!e->startedNs) e->startedNs = e->completedNs;
  e->state = success ? WorkState::kCompleted : WorkState::kFailed;
  e->error = error;
  if (e->isP2P) return;
  if (countStart) status_.lastStarted = std::max(status_.lastStarted, e->seq);
  if (success) status_.lastCompleted = std::max(status_.lastCompleted, e->seq);
}

void FlightRecorder::markTimedOut(uint64_t recordId) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (FlightRecorderEntry* e = find(recordId)) e->timedOut = true;
}

GroupStatus FlightRecorder::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

std::vector<FlightRecorderEntry> FlightRecorder::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<FlightRecorderEntry> out;
  out.reserve(ring_.size());
  for (size_t i = 0; i < ring_.size(); ++i) out.push_back(ring_[(oldest() + i) % ring_.size()]);
  return out;
}

void configureFlightRecorder(const FlightRecorderSettings& settings) {
  Config& c = config();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.sizeSet) c.size = settings.bufferSize;
  if (!c.prefixSet) c.prefix = settings.dumpPrefix;
}

size_t flightRecorderBufferSize() {
  Config& c = config();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.size;
}

void setFlightRecorderBufferSize(size_t entries) {
  Config& c = config();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.size = entries;
  c.sizeSet = true;
}

std::string flightRecorderDumpPrefix() {
  Config& c = config();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.prefix;
}

void setFlightRecorderDumpPrefix(std::string prefix) {
  Config& c = config();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.prefix = std::move(prefix);
  c.prefixSet = true;
}

void registerFlightRecorder(const FlightRecorderPtr& recorder) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.recorders.push_back(recorder);
}

std::string flightRecorderDumpPath(int globalRank) {
  return fmt::format("{}{}.json", flightRecorderDumpPrefix(), globalRank);
}

std::string flightRecorderJson(int globalRank, const std::string& trigger,
                               const std::string& reason) {
  json dump{{"version", "2.4-distlab"}, {"rank", globalRank},       {"pid", getpid()},
            {"host", hostName()},        {"trigger", trigger},       {"reason", reason},
            {"dump_time_ns", wallNs()},  {"pg_config", json::object()},
            {"pg_status", json::object()}, {"entries", json::array()}};
  for (const auto& fr : liveRecorders()) {
    if (fr->globalRank() != globalRank) continue;
    dump["pg_config"][fr->groupName()] = {{"name", fr->groupName()},
                                          {"desc", fr->groupDesc()},
                                          {"ranks", fr->globalRanks()},
                                          {"backend", fr->backendName()}};
    const GroupStatus s = fr->status();
    dump["pg_status"][fr->groupName()] = {{"last_enqueued_collective", s.lastEnqueued},
                                          {"last_started_collective", s.lastStarted},
                                          {"last_completed_collective", s.lastCompleted}};
    for (const auto& e : fr->entries()) dump["entries"].push_back(entryJson(*fr, e));
  }
  return dump.dump(1);
}

namespace {

// Note [Dump files]: a dump is written into an unnamed file (O_TMPFILE in the
// target folder) and linked under its name only once complete, so a process
// killed mid-dump (SIGKILL, teardown) leaves no empty or partial file. A newer
// dump replaces an older one atomically: linked as "<path>.tmp<pid>", then
// renamed over it, so a reader never finds the rank's dump missing. (It was
// unlink, then link: a rank that exited between the two left no dump at all,
// which the scenario runner's analysis then missed.) Only a SIGKILL between
// that link and the rename can leave the temporary name; an exit through
// settleFlightRecorderDumps() cannot. Folders whose filesystem lacks O_TMPFILE
// get "<path>.tmp<pid>" + rename, removed on every error path.
void writeAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

// The temporary name both replacement paths link or write under.
std::string tempNameFor(const std::string& path) {
  return fmt::format("{}.tmp{}", path, getpid());
}

void writeViaRename(const std::string& path, const std::string& text) {
  const std::string tmp = tempNameFor(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(std::strerror(errno));
  try {
    writeAll(fd, text);
    ::close(fd);
    fd = -1;
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error(std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
}

void writeDumpFile(const std::string& path, const std::string& text) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    return writeViaRename(path, text);
  }
  if (fd < 0) throw std::runtime_error(std::strerror(errno));
  try {
    writeAll(fd, text);
    const std::string self = fmt::format("/proc/self/fd/{}", fd);
    const auto linkAs = [&](const std::string& name) {
      return ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0;
    };
    if (!linkAs(path)) {
      if (errno != EEXIST) throw std::runtime_error(std::strerror(errno));
      const std::string tmp = tempNameFor(path);
      ::unlink(tmp.c_str());  // left by an earlier process with this pid
      if (!linkAs(tmp)) throw std::runtime_error(std::strerror(errno));
      if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw std::runtime_error(std::strerror(err));
      }
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

// One dump at a time per process: the watchdog thread and a failing caller
// may dump together, and both would write the same temporary file.
// settleFlightRecorderDumps() takes it for the rest of the process's life.
std::timed_mutex& dumpMutex() {
  static std::timed_mutex m;
  return m;
}
std::atomic<bool> gDumpsSettled{false};

}  // namespace

bool settleFlightRecorderDumps(std::chrono::milliseconds wait) {
  if (gDumpsSettled.exchange(true)) return true;  // already settled
  // Held until the process ends: a dump that starts later would be cut off.
  return dumpMutex().try_lock_for(wait);
}

std::vector<std::string> dumpFlightRecorders(const std::string& trigger,
                                             const std::string& reason, int globalRank) {
  std::vector<int> ranks;
  for (const auto& fr : liveRecorders()) {
    const int g = fr->globalRank();
    if ((globalRank < 0 || g == globalRank) &&
        std::find(ranks.begin(), ranks.end(), g) == ranks.end()) {
      ranks.push_back(g);
    }
  }
  std::vector<std::string> written;
  if (gDumpsSettled.load()) return written;  // the process is ending
  std::lock_guard<std::timed_mutex> lock(dumpMutex());
  // Settled while this thread waited behind a dump: settle() now waits for
  // the lock, and a dump started here would only delay the exit.
  if (gDumpsSettled.load()) return written;
  for (int g : ranks) {
    const std::string path = flightRecorderDumpPath(g);
    try {
      writeDumpFile(path, flightRecorderJson(g, trigger, reason) + "\n");  // Note [Dump files]
      written.push_back(path);
      DL_LOG(INFO, "flight recorder dumped to {} ({})", path, trigger);
    } catch (const std::exception& e) {
      DL_LOG(ERROR, "flight recorder: could not write {}: {}", path, e.what());
    }
  }
  return written;
}

}  // namespace distlab::comm
