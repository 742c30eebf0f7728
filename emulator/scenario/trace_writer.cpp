#include "emulator/scenario/trace_writer.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace distlab::emulator {

void writeMergedTrace(const std::string& path, const Scenario& s,
                      const std::vector<RankEvents>& events) {
  int64_t t0 = 0, tEnd = 0;
  auto see = [&](int64_t us) {
    if (us <= 0) return;
    if (t0 == 0 || us < t0) t0 = us;
    tEnd = std::max(tEnd, us);
  };
  for (const auto& e : events) {
    for (const auto& op : e.ops) {
      see(op.us);
      see(op.doneUs);
    }
    for (const auto& [us, text] : e.faults) see(us);
    for (const auto& [us, step] : e.steps) see(us);
  }
  nlohmann::json out = nlohmann::json::array();
  for (size_t r = 0; r < events.size(); ++r) {
    const int pid = static_cast<int>(r);
    out.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid},
                   {"args", {{"name", fmt::format("rank {}", r)}}}});
    for (const auto& op : events[r].ops) {
      int64_t end = op.doneUs > 0 ? op.doneUs : tEnd;
      out.push_back({{"ph", "X"}, {"pid", pid}, {"tid", 0},
                     {"name", fmt::format("{} #{}", op.op, op.seq)}, {"ts", op.us - t0},
                     {"dur", std::max<int64_t>(1, end - op.us)},
                     {"args", {{"op", op.fingerprint}, {"completed", op.doneUs > 0},
                               {"failed", op.failed}}}});
    }
    for (const auto& [us, text] : events[r].faults) {
      out.push_back({{"ph", "i"}, {"s", "p"}, {"pid", pid}, {"tid", 0},
                     {"name", "fault " + text}, {"ts", us - t0}});
    }
    for (const auto& [us, step] : events[r].steps) {
      out.push_back({{"ph", "i"}, {"s", "t"}, {"pid", pid}, {"tid", 1},
                     {"name", fmt::format("step {}", step)}, {"ts", us - t0}});
    }
  }
  nlohmann::json doc = {{"traceEvents", out},
                        {"displayTimeUnit", "ms"},
                        {"otherData", {{"scenario", s.name}, {"file", s.path}}}};
  std::ofstream(path) << doc.dump() << "\n";
}

}  // namespace distlab::emulator
