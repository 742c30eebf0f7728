#pragma once
// One process's trace as Chrome trace-event JSON (the "JSON Object Format":
// {"traceEvents": [...], "otherData": {...}}), which Perfetto and
// chrome://tracing open. Timestamps are microseconds on the monotonic clock
// plus `clockOffsetNs` (Note [Trace clock alignment], emulator/trace); the
// runner rebases merged traces to start at zero.
//
// Per track: a thread_name metadata event ("M") names the tid; complete events
// ('X') carry "dur"; async spans ('b'/'e') carry "id"; every event carries
// "cat" (categoryName) and, when present, "args".
#include <cstdint>
#include <string>

#include "runtime/core/trace.hpp"

namespace distlab::trace {

struct ChromeTraceInfo {
  int pid = 0;                 // the rank
  std::string processName;     // "rank 0"
  int64_t clockOffsetNs = 0;   // added to every timestamp (aligns to rank 0's clock)
  int64_t clockBoundNs = -1;   // the alignment's error bound; -1: not aligned
  // One moment read on both clocks (0: none), so that wall-clock logs can be
  // placed on the trace's timeline: mono = anchorMonoNs + (wall - anchorWallUs).
  int64_t anchorWallUs = 0;
  int64_t anchorMonoNs = 0;
};

// `text` as a JSON string literal, quotes included.
std::string jsonQuote(std::string_view text);

std::string chromeTraceJson(const Snapshot& s, const ChromeTraceInfo& info);

// Writes chromeTraceJson to `path` (via a temporary file renamed into place,
// so a reader never sees half a trace). Throws Error naming the path.
void writeChromeTrace(const std::string& path, const Snapshot& s, const ChromeTraceInfo& info);

}  // namespace distlab::trace
