#include "emulator/trace/overlap_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string_view>
#include <tuple>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {

std::vector<Interval> unite(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> out;
  for (const Interval& i : intervals) {
    if (i.end <= i.begin) continue;
    if (!out.empty() && i.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

double measure(const std::vector<Interval>& united) {
  double total = 0;
  for (const Interval& i : united) total += i.end - i.begin;
  return total;
}

std::vector<Interval> subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t j = 0;
  for (Interval rest : a) {
    while (j < b.size() && b[j].end <= rest.begin) ++j;
    for (size_t k = j; k < b.size() && b[k].begin < rest.end; ++k) {
      if (b[k].begin > rest.begin) out.push_back({rest.begin, b[k].begin});
      rest.begin = std::max(rest.begin, b[k].end);
    }
    if (rest.end > rest.begin) out.push_back(rest);
  }
  return out;
}

double intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].begin, b[j].begin);
    const double hi = std::min(a[i].end, b[j].end);
    if (hi > lo) total += hi - lo;
    (a[i].end < b[j].end) ? ++i : ++j;
  }
  return total;
}

namespace {

struct RankSpans {
  std::vector<std::pair<std::string, Interval>> steps;
  std::vector<Interval> compute;
  std::vector<Interval> comm;
  std::vector<Interval> wait;           // "wait" spans (not compute, even inside compute)
  std::vector<Interval> backward;       // "backward <module>" compute spans
  std::vector<Interval> backwardAll;    // those and the whole-pass "backward" span
  std::vector<double> bucketLaunches;   // begin of each "launch bucket N" span
  // Each async comm span under "<track name>/<span name>" (e.g. "comm g/allreduce #7"):
  // one collective, the same key on every rank (Note [Waiting for the last rank]).
  std::vector<std::pair<std::string, Interval>> commByKey;
};

bool startsWith(const std::string& text, std::string_view prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// A complete ('X') event into its rank's lists.
void addComplete(RankSpans& r, const std::string& cat, const std::string& name,
                 const Interval& span) {
  if (cat == "step") r.steps.emplace_back(name, span);
  if (cat == "compute") r.compute.push_back(span);
  if (cat == "compute" && startsWith(name, "backward ")) r.backward.push_back(span);
  if (cat == "compute" && startsWith(name, "backward")) r.backwardAll.push_back(span);
  if (cat == "comm") r.comm.push_back(span);
  if (cat == "ddp" && startsWith(name, "launch bucket")) r.bucketLaunches.push_back(span.begin);
  if (cat == "wait") r.wait.push_back(span);
}

bool counted(const std::string& cat) {
  return cat == "step" || cat == "compute" || cat == "comm" || cat == "ddp" || cat == "wait";
}

double number(const nlohmann::json& e, const char* key, size_t index) {
  auto it = e.find(key);
  if (it == e.end() || !it->is_number()) {
    throw ValueError(fmt::format("trace event {} has no numeric '{}': {}", index, key,
                                 e.dump().substr(0, 200)));
  }
  return it->get<double>();
}

// (pid, tid) -> the track's thread_name.
std::map<std::pair<int, int>, std::string> trackNames(const nlohmann::json& events) {
  std::map<std::pair<int, int>, std::string> out;
  for (const auto& e : events) {
    if (e.value("ph", "") != "M" || e.value("name", "") != "thread_name") continue;
    auto args = e.find("args");
    if (args == e.end() || !args->is_object()) continue;
    out[{e.value("pid", 0), e.value("tid", 0)}] = args->value("name", "");
  }
  return out;
}

std::map<int, RankSpans> collect(const nlohmann::json& events) {
  std::map<int, RankSpans> ranks;
  const auto tracks = trackNames(events);
  // (pid, tid, id) -> begin ts and name of an open async comm span
  std::map<std::tuple<int, int, std::string>, std::pair<double, std::string>> open;
  for (size_t n = 0; n < events.size(); ++n) {
    const auto& e = events[n];
    const std::string ph = e.value("ph", "");
    const std::string cat = e.value("cat", "");
    if (ph.empty()) throw ValueError(fmt::format("trace event {} has no 'ph'", n));
    if (ph == "M" || !counted(cat)) continue;
    const int pid = static_cast<int>(number(e, "pid", n));
    const double ts = number(e, "ts", n);
    RankSpans& r = ranks[pid];
    if (ph == "X") {
      addComplete(r, cat, e.value("name", cat), {ts, ts + number(e, "dur", n)});
    } else if (ph == "b" || ph == "e") {
      auto k = std::make_tuple(pid, e.value("tid", 0), e.value("id", std::string()));
      if (ph == "b") {
        open[k] = {ts, e.value("name", std::string())};
      } else {
        auto it = open.find(k);
        if (it == open.end()) {
          throw ValueError(fmt::format("trace event {}: async end without a begin (id {})", n,
                                       std::get<2>(k)));
        }
        if (cat == "comm") {
          const Interval span{it->second.first, ts};
          r.comm.push_back(span);
          auto track = tracks.find({pid, std::get<1>(k)});
          const std::string trackName = track == tracks.end() ? "" : track->second;
          r.commByKey.emplace_back(trackName + "/" + it->second.second, span);
        }
        open.erase(it);
      }
    }
  }
  return ranks;
}

std::vector<Interval> clip(const std::vector<Interval>& united, const Interval& window) {
  std::vector<Interval> out;
  for (const Interval& i : united) {
    const double lo = std::max(i.begin, window.begin), hi = std::min(i.end, window.end);
    if (hi > lo) out.push_back({lo, hi});
  }
  return out;
}

// The end of the last backward compute span inside `window` (its begin when none).
double backwardEnd(const std::vector<Interval>& backward, const Interval& window) {
  double end = window.begin;
  for (const Interval& b : backward) {
    if (b.begin >= window.begin && b.end <= window.end) end = std::max(end, b.end);
  }
  return end;
}

int countIn(const std::vector<double>& times, double from, double before) {
  return static_cast<int>(std::count_if(times.begin(), times.end(),
                                        [&](double t) { return t >= from && t < before; }));
}

// Spans that begin in [from, before).
int countBegunIn(const std::vector<Interval>& spans, double from, double before) {
  return static_cast<int>(std::count_if(spans.begin(), spans.end(), [&](const Interval& i) {
    return i.begin >= from && i.begin < before;
  }));
}

// The comm spans of each rank from the moment the last rank began the same
// collective (Note [Waiting for the last rank]); a collective only one rank
// traced keeps its own begin, and so does a key that is not unique on a rank
// (a trace without sequence numbers in its span names).
std::map<int, std::vector<Interval>> commAfterLastArrival(const std::map<int, RankSpans>& ranks) {
  std::map<std::string, double> lastBegin;
  std::set<std::string> ambiguous;
  for (const auto& [rank, spans] : ranks) {
    std::set<std::string> seen;
    for (const auto& [key, span] : spans.commByKey) {
      if (!seen.insert(key).second) ambiguous.insert(key);
      auto [it, fresh] = lastBegin.emplace(key, span.begin);
      if (!fresh) it->second = std::max(it->second, span.begin);
    }
  }
  for (const auto& key : ambiguous) lastBegin.erase(key);
  std::map<int, std::vector<Interval>> out;
  for (const auto& [rank, spans] : ranks) {
    auto& trimmed = out[rank];
    for (const auto& [key, span] : spans.commByKey) {
      auto last = lastBegin.find(key);
      const double from = last == lastBegin.end() ? span.begin : std::max(span.begin, last->second);
      if (span.end > from) trimmed.push_back({from, span.end});
    }
    trimmed = unite(std::move(trimmed));
  }
  return out;
}

}  // namespace

std::vector<StepOverlap> stepOverlaps(const nlohmann::json& trace) {
  const nlohmann::json& events = trace.is_array() ? trace : trace.at("traceEvents");
  if (!events.is_array()) throw ValueError("trace: 'traceEvents' is not an array");
  std::vector<StepOverlap> out;
  auto ranks = collect(events);
  const auto afterArrival = commAfterLastArrival(ranks);
  for (auto& [rank, spans] : ranks) {
    const auto waits = unite(spans.wait);
    const auto compute = subtract(unite(spans.compute), waits);
    const auto backward = subtract(unite(spans.backwardAll), waits);
    const auto comm = unite(spans.comm);
    std::sort(spans.steps.begin(), spans.steps.end(),
              [](const auto& a, const auto& b) { return a.second.begin < b.second.begin; });
    for (const auto& [name, window] : spans.steps) {
      StepOverlap s;
      s.rank = rank;
      s.step = name;
      s.startUs = window.begin;
      s.stepUs = window.end - window.begin;
      const auto c = clip(compute, window), m = clip(comm, window);
      s.computeUs = measure(c);
      s.commUs = measure(m);
      s.exposedCommUs = s.commUs - intersection(c, m);
      s.backwardUs = measure(clip(backward, window));
      const auto late = clip(afterArrival.at(rank), window);
      s.commAfterArrivalUs = measure(late);
      s.exposedAfterArrivalUs = s.commAfterArrivalUs - intersection(c, late);
      const double end = backwardEnd(spans.backward, window);
      s.launchesInBackward = countIn(spans.bucketLaunches, window.begin, end);
      s.waitsInBackward = countBegunIn(spans.wait, window.begin, end);
      out.push_back(s);
    }
  }
  return out;
}

std::map<int, OverlapSummary> summarizeByRank(const std::vector<StepOverlap>& steps,
                                              int skipSteps) {
  std::map<int, OverlapSummary> out;
  std::map<int, int> seen;
  for (const StepOverlap& s : steps) {
    if (seen[s.rank]++ < skipSteps) continue;
    OverlapSummary& o = out[s.rank];
    o.minLaunchesInBackward =
        o.steps == 0 ? s.launchesInBackward : std::min(o.minLaunchesInBackward, s.launchesInBackward);
    o.maxWaitsInBackward = std::max(o.maxWaitsInBackward, s.waitsInBackward);
    ++o.steps;
    o.stepUs += s.stepUs;
    o.computeUs += s.computeUs;
    o.commUs += s.commUs;
    o.exposedCommUs += s.exposedCommUs;
    o.backwardUs += s.backwardUs;
    o.commAfterArrivalUs += s.commAfterArrivalUs;
    o.exposedAfterArrivalUs += s.exposedAfterArrivalUs;
  }
  return out;
}

nlohmann::json readTraceFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("cannot read the trace file {}", path));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("the trace file {} is not JSON: {}", path, e.what()));
  }
}

}  // namespace distlab::emulator
