#include "runtime/core/trace.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <new>

#include "runtime/core/trace_records.hpp"

namespace distlab::trace {

namespace detail {
std::atomic<bool> gEnabled{false};
}  // namespace detail

namespace {

struct ThreadBuffer {
  std::mutex mutex;
  detail::RecordStore records;  // GUARDED_BY(mutex); Note [Trace records outside the heap]
  uint64_t dropped = 0;         // GUARDED_BY(mutex)
  uint32_t track = 0;
};

// Tracks and buffers outlive their threads (a progress thread that exited
// still has its events collected).
struct Registry {
  std::mutex mutex;
  std::vector<TrackInfo> tracks;                        // GUARDED_BY(mutex)
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;   // GUARDED_BY(mutex)
  std::map<std::string, uint32_t> virtualIds;           // GUARDED_BY(mutex)
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: threads may record at exit
  return *r;
}

thread_local std::shared_ptr<ThreadBuffer> tBuffer;
thread_local std::string tName;
thread_local std::vector<Label> tScopes;
thread_local bool tSuppressed = false;

ThreadBuffer& buffer() {
  if (!tBuffer) {
    auto b = std::make_shared<ThreadBuffer>();
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    b->track = static_cast<uint32_t>(r.tracks.size());
    std::string name = tName.empty() ? "thread " + std::to_string(b->track) : tName;
    r.tracks.push_back(TrackInfo{b->track, std::move(name), false});
    r.buffers.push_back(b);
    tBuffer = std::move(b);
  }
  return *tBuffer;
}

void record(Event e) {
  if (tSuppressed) return;
  ThreadBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (b.records.size() >= kMaxEventsPerThread) {
    ++b.dropped;
    return;
  }
  try {
    b.records.append(e);
  } catch (const std::bad_alloc&) {
    ++b.dropped;  // out of address space: the event is lost, counted, the run goes on
  }
}

}  // namespace

std::string_view categoryName(Category c) {
  switch (c) {
    case Category::kCompute: return "compute";
    case Category::kComm: return "comm";
    case Category::kWait: return "wait";
    case Category::kStep: return "step";
    case Category::kPhase: return "phase";
    case Category::kDdp: return "ddp";
    case Category::kMark: return "mark";
  }
  return "mark";
}

void clear() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto& b : r.buffers) {
    std::lock_guard<std::mutex> bl(b->mutex);
    b->records.clear();
    b->dropped = 0;
  }
}

void start() {
  clear();
  detail::gEnabled.store(true, std::memory_order_relaxed);
}

void stop() { detail::gEnabled.store(false, std::memory_order_relaxed); }

void nameThisThread(std::string name) {
  tName = std::move(name);
  if (!tBuffer) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.tracks[tBuffer->track].name = tName;
}

uint32_t currentTrack() { return buffer().track; }

uint32_t virtualTrack(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto [it, inserted] = r.virtualIds.emplace(name, static_cast<uint32_t>(r.tracks.size()));
  if (inserted) r.tracks.push_back(TrackInfo{it->second, name, true});
  return it->second;
}

void completeOn(uint32_t track, Category c, std::string name, int64_t startNs, int64_t endNs,
                std::string args) {
  if (!enabled()) return;
  record(Event{'X', c, track, startNs, std::max<int64_t>(0, endNs - startNs), 0, std::move(name),
               std::move(args)});
}

void complete(Category c, std::string name, int64_t startNs, int64_t endNs, std::string args) {
  if (!enabled()) return;
  completeOn(currentTrack(), c, std::move(name), startNs, endNs, std::move(args));
}

void instant(Category c, std::string name, std::string args, int64_t atNs) {
  if (!enabled()) return;
  record(Event{'i', c, currentTrack(), atNs != 0 ? atNs : monotonicNowNs(), 0, 0,
               std::move(name), std::move(args)});
}

void asyncSpan(uint32_t track, Category c, std::string name, uint64_t id, int64_t startNs,
               int64_t endNs, std::string args) {
  if (!enabled()) return;
  record(Event{'b', c, track, startNs, 0, id, name, std::move(args)});
  record(Event{'e', c, track, std::max(startNs, endNs), 0, id, std::move(name), {}});
}

void Span::begin(Category c, std::string_view prefix, std::string_view name) {
  active_ = true;
  category_ = c;
  name_.reserve(prefix.size() + name.size());
  name_.append(prefix).append(name);
  startNs_ = monotonicNowNs();
}

void Span::end() {
  complete(category_, std::move(name_), startNs_, monotonicNowNs(), std::move(args_));
}

Snapshot snapshot() {
  Snapshot s;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  s.tracks = r.tracks;
  for (auto& b : r.buffers) {
    std::lock_guard<std::mutex> bl(b->mutex);
    std::vector<Event> events = b->records.events();
    s.events.insert(s.events.end(), std::make_move_iterator(events.begin()),
                    std::make_move_iterator(events.end()));
    s.dropped += b->dropped;
  }
  std::stable_sort(s.events.begin(), s.events.end(),
                   [](const Event& a, const Event& b) { return a.track < b.track; });
  return s;
}

SuppressGuard::SuppressGuard() : previous_(tSuppressed) { tSuppressed = true; }
SuppressGuard::~SuppressGuard() { tSuppressed = previous_; }

void ScopeGuard::push(const Label& label) {
  tScopes.push_back(label);
  pushed_ = true;
}

void ScopeGuard::pop() { tScopes.pop_back(); }

Label currentScope() { return tScopes.empty() ? nullptr : tScopes.back(); }

}  // namespace distlab::trace
