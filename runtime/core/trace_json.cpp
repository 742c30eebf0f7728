#include "runtime/core/trace_json.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "runtime/core/errors.hpp"

namespace distlab::trace {

std::string jsonQuote(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

namespace {

std::string micros(int64_t ns) {
  if (ns < 0) return "-" + micros(-ns);
  return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

void appendEvent(std::string& out, const Event& e, const ChromeTraceInfo& info) {
  const int64_t ts = e.tsNs + info.clockOffsetNs;
  out += fmt::format(R"({{"ph":"{}","cat":"{}","name":{},"pid":{},"tid":{},"ts":{})", e.phase,
                     categoryName(e.category), jsonQuote(e.name), info.pid, e.track,
                     micros(ts));
  if (e.phase == 'X') out += fmt::format(R"(,"dur":{})", micros(e.durNs));
  if (e.phase == 'b' || e.phase == 'e') out += fmt::format(R"(,"id":"0x{:x}")", e.id);
  if (e.phase == 'i') out += R"(,"s":"t")";
  if (!e.args.empty()) out += ",\"args\":{" + e.args + "}";
  out += "}";
}

}  // namespace

std::string chromeTraceJson(const Snapshot& s, const ChromeTraceInfo& info) {
  std::string out = "{\"traceEvents\":[\n";
  out += fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})",
                     info.pid, jsonQuote(info.processName));
  for (const auto& t : s.tracks) {
    out += fmt::format(",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},"
                       "\"args\":{{\"name\":{}}}}}",
                       info.pid, t.id, jsonQuote(t.name));
  }
  for (const auto& e : s.events) {
    out += ",\n";
    appendEvent(out, e, info);
  }
  out += fmt::format(
      "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{{\"clock\":\"monotonic\","
      "\"rank\":{},\"clock_offset_ns\":{},\"clock_bound_ns\":{},\"dropped_events\":{},"
      "\"anchor_wall_us\":{},\"anchor_mono_ns\":{}}}}}\n",
      info.pid, info.clockOffsetNs, info.clockBoundNs, s.dropped, info.anchorWallUs,
      info.anchorMonoNs);
  return out;
}

void writeChromeTrace(const std::string& path, const Snapshot& s, const ChromeTraceInfo& info) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << chromeTraceJson(s, info);
    if (!f.flush()) throw Error(fmt::format("cannot write the trace file {}", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(fmt::format("cannot write the trace file {} (rename failed)", path));
  }
}

}  // namespace distlab::trace
