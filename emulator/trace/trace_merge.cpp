#include "emulator/trace/trace_merge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>

#include "emulator/trace/overlap_metrics.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

constexpr int kEventLogTid = 1 << 20;  // the track for event-log instants
// Timestamps are whole nanoseconds written as microseconds with three
// decimals; sums of two parsed values may differ from the exact one by far
// less than this.
constexpr double kEps = 5e-4;

struct Anchor {
  bool valid = false;
  double wallUs = 0;
  double traceUs = 0;  // the anchor's moment on the aligned trace clock
};

Anchor anchorOf(const nlohmann::json& doc) {
  const auto& o = doc.value("otherData", nlohmann::json::object());
  const int64_t wall = o.value("anchor_wall_us", int64_t{0});
  if (wall == 0) return {};
  const double mono = static_cast<double>(o.value("anchor_mono_ns", int64_t{0}));
  const double offset = static_cast<double>(o.value("clock_offset_ns", int64_t{0}));
  return {true, static_cast<double>(wall), (mono + offset) / 1000.0};
}

}  // namespace

nlohmann::json mergeRankTraces(const std::vector<RankTraceInput>& ranks,
                               const nlohmann::json& otherData) {
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json clocks = nlohmann::json::array();
  Anchor fallback;
  std::map<int, Anchor> anchors;
  for (const auto& r : ranks) {
    if (r.path.empty() || !std::filesystem::exists(r.path)) continue;
    nlohmann::json doc = readTraceFile(r.path);
    anchors[r.rank] = anchorOf(doc);
    if (!fallback.valid) fallback = anchors[r.rank];
    const auto& o = doc.value("otherData", nlohmann::json::object());
    clocks.push_back({{"rank", r.rank},
                      {"offset_ns", o.value("clock_offset_ns", int64_t{0})},
                      {"bound_ns", o.value("clock_bound_ns", int64_t{-1})},
                      {"dropped_events", o.value("dropped_events", int64_t{0})}});
    for (auto& e : doc.at("traceEvents")) {
      e["pid"] = r.rank;
      if (e.value("ph", "") == "M" && e.value("name", "") == "process_name") {
        e["args"]["name"] = fmt::format("rank {}", r.rank);
      }
      events.push_back(std::move(e));
    }
  }
  if (clocks.empty()) throw Error("no rank wrote a trace (rank<R>.trace.json)");
  for (const auto& r : ranks) {
    const Anchor a = anchors.count(r.rank) && anchors[r.rank].valid ? anchors[r.rank] : fallback;
    if (!a.valid || r.wallInstants.empty()) continue;
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r.rank},
                      {"tid", kEventLogTid}, {"args", {{"name", "event log"}}}});
    for (const auto& [wallUs, name] : r.wallInstants) {
      events.push_back({{"ph", "i"}, {"s", "p"}, {"cat", "mark"}, {"name", name},
                        {"pid", r.rank}, {"tid", kEventLogTid},
                        {"ts", a.traceUs + (static_cast<double>(wallUs) - a.wallUs)}});
    }
  }
  double t0 = std::numeric_limits<double>::max();
  for (const auto& e : events) {
    if (e.contains("ts")) t0 = std::min(t0, e["ts"].get<double>());
  }
  for (auto& e : events) {
    if (e.contains("ts")) e["ts"] = e["ts"].get<double>() - t0;
  }
  nlohmann::json other = otherData;
  other["clocks"] = clocks;
  other["origin_us"] = t0;
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", other}};
}

std::vector<std::string> nestingProblems(const nlohmann::json& trace) {
  const nlohmann::json& events = trace.is_array() ? trace : trace.at("traceEvents");
  std::map<std::pair<int, int>, std::vector<std::pair<Interval, std::string>>> tracks;
  for (const auto& e : events) {
    if (e.value("ph", "") != "X") continue;
    const double ts = e.at("ts").get<double>();
    tracks[{e.at("pid").get<int>(), e.value("tid", 0)}].push_back(
        {{ts, ts + e.at("dur").get<double>()}, e.value("name", "")});
  }
  std::vector<std::string> problems;
  for (auto& [key, spans] : tracks) {
    // Longer first among equal starts: a parent precedes the child it encloses.
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return a.first.begin != b.first.begin ? a.first.begin < b.first.begin
                                            : a.first.end > b.first.end;
    });
    std::vector<std::pair<Interval, std::string>> stack;
    for (const auto& s : spans) {
      while (!stack.empty() && stack.back().first.end <= s.first.begin + kEps) stack.pop_back();
      if (!stack.empty() && s.first.end > stack.back().first.end + kEps) {
        problems.push_back(fmt::format("pid {} tid {}: '{}' [{}, {}] overlaps '{}' [{}, {}]",
                                       key.first, key.second, s.second, s.first.begin,
                                       s.first.end, stack.back().second,
                                       stack.back().first.begin, stack.back().first.end));
      }
      stack.push_back(s);
    }
  }
  return problems;
}

}  // namespace distlab::emulator
