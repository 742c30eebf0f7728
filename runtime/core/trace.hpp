#pragma once
// Tracing: spans and instants on named tracks, stamped by one monotonic clock
// (monotonicNowNs, runtime/core/clock.hpp), kept in per-thread buffers and
// written as Chrome trace-event JSON (opens in Perfetto; trace_json.hpp).
//
// Note [Tracing off costs one branch]
// Tracing is off by default. Every call site starts with `if (enabled())` --
// a relaxed load of one process-wide atomic -- and builds no strings, takes
// no locks and allocates nothing when it is false; Span's constructor and
// destructor are exactly that branch. When on, an event is appended to the
// calling thread's own buffer under that buffer's mutex, which only the
// collector (snapshot()) ever contends for.
//
// Note [Trace tracks]
// Every thread that records an event gets a track (Chrome "tid") the first
// time it does, named by nameThisThread() ("compute", "progress", "link
// timer") or "thread <n>". Work that is not bound to one thread -- a
// collective from its start to its completion, which a link model may finish
// on another thread -- goes on a virtual track (virtualTrack("comm default"))
// as an async span ('b'/'e' with an id), so overlapping operations never
// break the nesting of a thread's track: complete events ('X') on one thread
// track always nest, because they come from scoped Spans.
//
// Note [Trace categories]
// The category says what a span means for overlap analysis
// (emulator/trace/overlap_metrics.hpp): kCompute is work on the compute
// thread (module forward, autograd nodes per module, optimizer step), kComm a
// collective from start to completion, kWait a thread blocked on
// communication, kStep one training step; kPhase, kDdp and kMark are context
// (whole backward, bucket events, hooks) that the metrics do not count.
//
// Thread-safety: every function may be called from any thread. start() and
// stop() may race with recording threads; events recorded around the switch
// are kept or dropped whole.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/clock.hpp"

namespace distlab::trace {

enum class Category : uint8_t { kCompute, kComm, kWait, kStep, kPhase, kDdp, kMark };
// "compute", "comm", "wait", "step", "phase", "ddp", "mark" (the Chrome "cat").
std::string_view categoryName(Category c);

namespace detail {
extern std::atomic<bool> gEnabled;
}  // namespace detail

inline bool enabled() { return detail::gEnabled.load(std::memory_order_relaxed); }

// Clears every buffer and turns recording on. Idempotent.
void start();
// Turns recording off; recorded events stay until the next start() or clear().
void stop();
void clear();

// Names the calling thread's track (may be called before tracing starts; the
// name is used when the thread first records).
void nameThisThread(std::string name);
// The calling thread's track id (registers it when new).
uint32_t currentTrack();
// A named track not bound to a thread; the same name gives the same id.
uint32_t virtualTrack(const std::string& name);

struct Event {
  char phase = 'X';  // 'X' complete, 'i' instant, 'b'/'e' async begin/end
  Category category = Category::kMark;
  uint32_t track = 0;
  int64_t tsNs = 0;   // monotonicNowNs clock
  int64_t durNs = 0;  // 'X' only
  uint64_t id = 0;    // 'b'/'e' only: pairs begin with end on one track
  std::string name;
  std::string args;  // JSON object members without braces ("\"seq\":3"), may be empty
};

// Record functions: no-ops when tracing is off (callers still test enabled()
// first so that they build no strings).
void complete(Category c, std::string name, int64_t startNs, int64_t endNs,
              std::string args = {});
void completeOn(uint32_t track, Category c, std::string name, int64_t startNs, int64_t endNs,
                std::string args = {});
void instant(Category c, std::string name, std::string args = {}, int64_t atNs = 0);
// An async span [startNs, endNs] on `track` (a virtual track), paired by `id`.
void asyncSpan(uint32_t track, Category c, std::string name, uint64_t id, int64_t startNs,
               int64_t endNs, std::string args = {});

// A scoped complete event on the calling thread's track. Name = prefix + name,
// built only when tracing is on.
class Span {
 public:
  Span(Category c, std::string_view prefix, std::string_view name = {}) {
    if (enabled()) begin(c, prefix, name);
  }
  ~Span() {
    if (active_) end();
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  // Extra JSON members for the event (when on).
  void setArgs(std::string args) {
    if (active_) args_ = std::move(args);
  }

 private:
  void begin(Category c, std::string_view prefix, std::string_view name);
  void end();
  bool active_ = false;
  Category category_ = Category::kMark;
  int64_t startNs_ = 0;
  std::string name_;
  std::string args_;
};

struct TrackInfo {
  uint32_t id = 0;
  std::string name;
  bool isVirtual = false;
};

struct Snapshot {
  std::vector<TrackInfo> tracks;
  std::vector<Event> events;  // per track in recording order, tracks in id order
  uint64_t dropped = 0;       // events past the per-thread cap (kMaxEventsPerThread) or
                              // that found no memory to be stored in
};

// At most this many events per thread buffer between start() and clear();
// later ones are counted in Snapshot::dropped (memory stays bounded on long runs).
inline constexpr size_t kMaxEventsPerThread = 1 << 20;

// A copy of everything recorded so far.
Snapshot snapshot();

// Drops the calling thread's events while alive (a reference computation run
// inside a traced step must not count as the step's compute).
class SuppressGuard {
 public:
  SuppressGuard();
  ~SuppressGuard();
  SuppressGuard(const SuppressGuard&) = delete;
  SuppressGuard& operator=(const SuppressGuard&) = delete;

 private:
  bool previous_;
};

// ---- scopes: which module an autograd node belongs to --------------------------
// A label shared by a module and the nodes recorded under it.
using Label = std::shared_ptr<const std::string>;

// Pushes `label` as the calling thread's current scope while alive (when on).
class ScopeGuard {
 public:
  explicit ScopeGuard(const Label& label) {
    if (enabled()) push(label);
  }
  ~ScopeGuard() {
    if (pushed_) pop();
  }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  void push(const Label& label);
  void pop();
  bool pushed_ = false;
};

// The innermost scope of the calling thread, or null.
Label currentScope();

}  // namespace distlab::trace
