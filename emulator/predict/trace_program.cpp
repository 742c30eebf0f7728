// Note [Programs from a trace] and Note [Scaling a trace] (trace_program.hpp).
#include "emulator/predict/trace_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "runtime/comm/comm_trace.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using nlohmann::json;
using Kind = SimAction::Kind;

// The OpType whose trace name (comm_trace.hpp: the c10d name, lower case) is `name`.
comm::OpType opFromTraceName(const std::string& name) {
  for (int i = 0; i < static_cast<int>(comm::OpType::kUnknown); ++i) {
    const auto op = static_cast<comm::OpType>(i);
    if (comm::traceOpName(op) == name) return op;
  }
  throw ValueError(fmt::format("trace: unknown operation '{}' in a comm span", name));
}

// A comm span's label, parsed: "allreduce #5", or a message's "send 0->2 #3"
// on its sender and "recv 0->2 #3" on its receiver (comm_trace.hpp).
struct CommLabel {
  comm::OpType op = comm::OpType::kUnknown;
  uint64_t seq = 0;
  int src = -1, dst = -1;  // a message's pair, in group ranks
  bool isMessage() const { return src >= 0; }
};

int groupRankIn(const std::string& text, const std::string& label) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    throw ValueError(fmt::format("trace: comm span '{}' names no pair 'SRC->DST'", label));
  }
  return std::stoi(text);
}

CommLabel parseLabel(const std::string& label) {
  const auto hash = label.rfind(" #");
  const std::string seq = hash == std::string::npos ? "" : label.substr(hash + 2);
  if (seq.empty() || seq.find_first_not_of("0123456789") != std::string::npos ||
      seq.size() > 18) {
    throw ValueError(fmt::format("trace: comm span '{}' has no '#<seq>'", label));
  }
  CommLabel out;
  out.seq = std::stoull(seq);
  const std::string head = label.substr(0, hash);
  const auto space = head.find(' ');
  out.op = opFromTraceName(head.substr(0, space));
  if (out.op == comm::OpType::kRecvAnysource) {
    throw ValueError(fmt::format("trace: {}: a receive from any source names no sender, so the "
                                 "replay cannot pair it; receive from a named rank", label));
  }
  if (!comm::isPointToPoint(out.op)) return out;
  const std::string pair = space == std::string::npos ? "" : head.substr(space + 1);
  const auto arrow = pair.find("->");
  if (arrow == std::string::npos) {
    throw ValueError(fmt::format("trace: comm span '{}' names no pair 'SRC->DST'", label));
  }
  out.src = groupRankIn(pair.substr(0, arrow), label);
  out.dst = groupRankIn(pair.substr(arrow + 2), label);
  return out;
}

// One key per operation of a group: a collective's label, or for a message
// the same key on its sender and its receiver ("message 0->2 #3").
std::string commKey(const std::string& group, const CommLabel& l, const std::string& label) {
  if (!l.isMessage()) return group + "/" + label;
  return fmt::format("{}/message {}->{} #{}", group, l.src, l.dst, l.seq);
}

double seconds(const json& e, const char* key) {
  if (!e.contains(key) || !e[key].is_number()) {
    throw ValueError(fmt::format("trace: an event has no numeric '{}': {}", key, e.dump()));
  }
  return e[key].get<double>() * 1e-6;  // Chrome trace times are microseconds
}

// One traced collective as one rank saw it.
struct RankComm {
  std::string key;  // group/label
  double issuedS = -1, endS = -1;
};

struct RankEvents {
  int computeTid = -1;
  std::vector<RankComm> comms;                       // in issue order
  std::vector<std::pair<double, double>> waits;      // compute thread's wait spans
  std::vector<std::pair<double, double>> steps;      // step spans
};

struct Collected {
  std::map<int, RankEvents> ranks;
  std::map<std::string, SimCollective> collectives;  // by key
  std::map<std::string, std::set<int>> members;      // group -> ranks that ran its ops
  std::map<std::string, std::pair<int, int>> messages;  // key -> (sender, receiver) pids
  std::map<std::string, ShardLayout> layouts;           // key -> FSDP's shard layout
};

// The span args "shard_rows" and "row_bytes" (Note [Padded shards in the
// trace]), when present: equal-length arrays of whole numbers >= 0.
std::optional<ShardLayout> shardLayoutOf(const json& args, const std::string& label) {
  if (!args.contains("shard_rows") && !args.contains("row_bytes")) return std::nullopt;
  const json& rows = args.value("shard_rows", json());
  const json& bytes = args.value("row_bytes", json());
  const auto wholeNumbers = [](const json& a) {
    return a.is_array() && std::all_of(a.begin(), a.end(), [](const json& v) {
             return v.is_number_integer() && v.get<int64_t>() >= 0 &&
                    v.get<int64_t>() <= (int64_t{1} << 40);
           });
  };
  if (!wholeNumbers(rows) || !wholeNumbers(bytes) || rows.size() != bytes.size()) {
    throw ValueError(fmt::format("trace: comm span '{}' has a malformed shard layout (shard_rows "
                                 "and row_bytes: arrays of the same length, whole numbers >= 0)",
                                 label));
  }
  return ShardLayout{rows.get<std::vector<int64_t>>(), bytes.get<std::vector<int64_t>>()};
}

// First pass: names, comm spans (begin carries the args, end the time).
void collectComms(const json& events, Collected& c) {
  std::map<std::pair<int, std::string>, std::string> openById;  // (pid, id) -> key
  std::map<std::pair<int, std::string>, double> issued;         // (pid, group/label) -> ts
  for (const json& e : events) {
    const std::string ph = e.value("ph", "");
    const int pid = e.value("pid", -1);
    if (ph == "M" && e.value("name", "") == "thread_name" &&
        e["args"].value("name", "") == "compute") {
      c.ranks[pid].computeTid = e.value("tid", -1);
    }
    if (ph == "i" && e.value("name", "").rfind("issue ", 0) == 0 && e.contains("args")) {
      const std::string label = e["name"].get<std::string>().substr(6);
      issued[{pid, commKey(e["args"].value("group", ""), parseLabel(label), label)}] =
          seconds(e, "ts");
    }
    if (e.value("cat", "") != "comm" || (ph != "b" && ph != "e")) continue;
    const std::string id = e.value("id", "");
    if (ph == "b") {
      const json& a = e.at("args");
      if (!a.contains("group") || !a.contains("seq") || !a.contains("bytes")) {
        throw ValueError(fmt::format("trace: comm span without group/seq/bytes: {}", e.dump()));
      }
      const std::string group = a["group"].get<std::string>();
      const std::string label = e.value("name", "");
      const CommLabel parsed = parseLabel(label);
      const std::string key = commKey(group, parsed, label);
      c.members[group].insert(pid);
      auto [it, fresh] = c.collectives.try_emplace(key);
      const int64_t bytes = a["bytes"].get<int64_t>();
      if (fresh && parsed.isMessage()) {
        // Both sides are one SimCollective: a send on a stream of its own
        // direction (Note [Messages in the replay], simulator.hpp).
        const std::string pair = fmt::format("{}->{}", parsed.src, parsed.dst);
        it->second = SimCollective{fmt::format("send {} #{} on {}", pair, parsed.seq, group),
                                   group + " " + pair, comm::OpType::kSend, bytes, {}};
        c.messages[key] = {-1, -1};
      } else if (fresh) {
        it->second =
            SimCollective{fmt::format("{} on {}", label, group), group, parsed.op, bytes, {}};
      } else if (it->second.bytes != bytes) {
        throw ValueError(fmt::format("trace: ranks disagree on the size of {} ({} and {} bytes)",
                                     it->second.name, it->second.bytes, bytes));
      }
      if (auto layout = shardLayoutOf(a, label); layout && fresh) c.layouts[key] = *layout;
      if (parsed.isMessage()) {
        auto& [sender, receiver] = c.messages[key];
        (parsed.op == comm::OpType::kSend ? sender : receiver) = pid;
      }
      c.ranks[pid].comms.push_back({key, seconds(e, "ts"), -1});
      openById[{pid, id}] = key;
    } else {
      const auto open = openById.find({pid, id});
      if (open == openById.end()) continue;
      for (RankComm& rc : c.ranks[pid].comms) {
        if (rc.key == open->second) rc.endS = seconds(e, "ts");
      }
      openById.erase(open);
    }
  }
  // The issue, when recorded, is earlier than the start (the op may queue
  // behind its stream's previous one); events are not in time order.
  for (auto& [pid, r] : c.ranks) {
    for (RankComm& rc : r.comms) {
      const auto iss = issued.find({pid, rc.key});
      if (iss != issued.end()) rc.issuedS = std::min(rc.issuedS, iss->second);
    }
  }
}

void collectSpans(const json& events, Collected& c) {
  for (const json& e : events) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    const int pid = e.value("pid", -1);
    auto it = c.ranks.find(pid);
    if (it == c.ranks.end()) continue;
    const double b = seconds(e, "ts"), d = seconds(e, "dur");
    if (cat == "step") it->second.steps.push_back({b, b + d});
    if (cat == "wait" && e.value("tid", -2) == it->second.computeTid) it->second.waits.push_back({b, b + d});
  }
  for (auto& [pid, r] : c.ranks) {
    std::sort(r.steps.begin(), r.steps.end());
    std::sort(r.waits.begin(), r.waits.end());
    std::sort(r.comms.begin(), r.comms.end(),
              [](const RankComm& a, const RankComm& b) { return a.issuedS < b.issuedS; });
  }
}

// One rank's program (Note [Programs from a trace]).
std::vector<SimAction> programOf(const RankEvents& r, const std::map<std::string, int>& index) {
  enum Order { kStepBegin, kIssue, kWaitSpan, kImplicitWait, kStepEnd };
  struct Point {
    double t;
    Order order;
    size_t what;  // comm index, wait index or step index
    bool operator<(const Point& o) const { return t != o.t ? t < o.t : order < o.order; }
  };
  std::vector<Point> points;
  std::vector<std::vector<size_t>> claims(r.waits.size());
  std::vector<bool> claimed(r.comms.size(), false);
  for (size_t w = 0; w < r.waits.size(); ++w) {
    for (size_t i = 0; i < r.comms.size(); ++i) {
      const RankComm& rc = r.comms[i];
      if (!claimed[i] && rc.issuedS <= r.waits[w].first && rc.endS >= 0 &&
          rc.endS <= r.waits[w].second + 1e-6) {
        claimed[i] = true;
        claims[w].push_back(i);
      }
    }
    points.push_back({r.waits[w].first, kWaitSpan, w});
  }
  for (size_t i = 0; i < r.comms.size(); ++i) {
    points.push_back({r.comms[i].issuedS, kIssue, i});
    if (!claimed[i] && r.comms[i].endS >= 0) points.push_back({r.comms[i].endS, kImplicitWait, i});
  }
  for (size_t s = 0; s < r.steps.size(); ++s) {
    points.push_back({r.steps[s].first, kStepBegin, s});
    points.push_back({r.steps[s].second, kStepEnd, s});
  }
  std::sort(points.begin(), points.end());
  std::vector<SimAction> program;
  double cursor = points.empty() ? 0 : points.front().t;
  const auto busyUntil = [&](double t) {
    if (t > cursor) program.push_back({Kind::kCompute, t - cursor, -1, {}});
    cursor = std::max(cursor, t);
  };
  for (const Point& p : points) {
    busyUntil(p.t);
    switch (p.order) {
      case kStepBegin: program.push_back({Kind::kMark, 0, -1, "step begin"}); break;
      case kStepEnd: program.push_back({Kind::kMark, 0, -1, "step end"}); break;
      case kIssue: program.push_back({Kind::kIssue, 0, index.at(r.comms[p.what].key), {}}); break;
      case kImplicitWait: program.push_back({Kind::kWait, 0, index.at(r.comms[p.what].key), {}}); break;
      case kWaitSpan:
        for (size_t i : claims[p.what]) program.push_back({Kind::kWait, 0, index.at(r.comms[i].key), {}});
        cursor = std::max(cursor, r.waits[p.what].second);  // blocked time: the replay predicts it
        break;
    }
  }
  return program;
}

// The nccl-tests size (link_model.hpp) of a traced op from its input bytes.
int64_t ncclTestsBytes(comm::OpType op, int64_t inputBytes, int groupSize) {
  switch (op) {
    case comm::OpType::kAllgather: case comm::OpType::kAllgatherBase:
    case comm::OpType::kAllgatherCoalesced: case comm::OpType::kGather:
      return inputBytes * groupSize;  // the input is one rank's part
    default:
      return inputBytes;
  }
}

}  // namespace

double ShardLayout::paddedBytes(int world) const {
  double total = 0;  // a double: rows and row bytes up to 2^40 each (shardLayoutOf)
  for (size_t i = 0; i < rows.size(); ++i) {
    total += static_cast<double>((rows[i] + world - 1) / world) *  // ceil(rows / world)
             static_cast<double>(rowBytes[i]);
  }
  return total * world;
}

TracedRun readTracedRun(const json& trace) {
  const json& events = trace.is_array() ? trace : trace.value("traceEvents", json::array());
  if (!events.is_array() || events.empty()) throw ValueError("trace: no traceEvents");
  Collected c;
  collectComms(events, c);
  collectSpans(events, c);
  TracedRun run;
  run.worldSize = c.ranks.empty() ? 0 : c.ranks.rbegin()->first + 1;
  if (run.worldSize == 0 || static_cast<int>(c.ranks.size()) != run.worldSize) {
    throw ValueError(fmt::format("trace: ranks 0..{} must each have events (found {})",
                                 run.worldSize - 1, c.ranks.size()));
  }
  std::map<std::string, int> index;
  for (auto& [key, sc] : c.collectives) {
    if (const auto message = c.messages.find(key); message != c.messages.end()) {
      const auto [sender, receiver] = message->second;
      if (sender < 0 || receiver < 0) {
        throw ValueError(fmt::format("trace: {} has only its {} in the trace; a message replays "
                                     "with both sides", sc.name, sender < 0 ? "receive" : "send"));
      }
      if (sender == receiver) {
        throw ValueError(fmt::format("trace: {} is rank {}'s message to itself, which takes no "
                                     "link; the replay does not take it", sc.name, sender));
      }
      sc.ranks = {sender, receiver};
    } else {
      const auto& members = c.members.at(sc.stream);
      sc.ranks.assign(members.begin(), members.end());
    }
    sc.bytes = ncclTestsBytes(sc.op, sc.bytes, static_cast<int>(sc.ranks.size()));
    if (const auto layout = c.layouts.find(key); layout != c.layouts.end()) {
      run.shardLayouts[static_cast<int>(run.collectives.size())] = layout->second;
    }
    index[key] = static_cast<int>(run.collectives.size());
    run.collectives.push_back(sc);
  }
  for (const auto& [pid, r] : c.ranks) {
    if (r.steps.empty()) throw ValueError(fmt::format("trace: rank {} has no step span", pid));
    run.programs.push_back(programOf(r, index));
    for (size_t s = 0; s < r.steps.size(); ++s) {
      if (run.tracedStepS.size() <= s) run.tracedStepS.resize(s + 1, 0);
      run.tracedStepS[s] = std::max(run.tracedStepS[s], r.steps[s].second - r.steps[s].first);
    }
  }
  return run;
}

SimInput scaleTracedRun(const TracedRun& run, int worldSize, const Topology& topology,
                        CollectiveAlgorithm algorithm) {
  if (worldSize < 1 || worldSize > kMaxPredictWorld) {
    throw ValueError(fmt::format("predict: world size {} must be in 1..{} (the replay runs "
                                 "every rank's program)", worldSize, kMaxPredictWorld));
  }
  SimInput in{topology, run.collectives, {}};
  for (SimCollective& c : in.collectives) {
    c.algorithm = algorithm;
    if (worldSize == run.worldSize) continue;
    if (comm::isPointToPoint(c.op)) {
      throw ValueError(fmt::format("predict: {} is point-to-point: a trace with messages replays "
                                   "only at its own world size {} (another topology or algorithm), "
                                   "not at {}", c.name, run.worldSize, worldSize));
    }
    if (static_cast<int>(c.ranks.size()) != run.worldSize) {
      throw ValueError(fmt::format("predict: {} runs on {} of the traced {} ranks; only groups "
                                   "of the whole world scale (predict at world {} instead)",
                                   c.name, c.ranks.size(), run.worldSize, run.worldSize));
    }
    c.ranks.resize(worldSize);
    for (int r = 0; r < worldSize; ++r) c.ranks[r] = r;
  }
  for (const auto& [i, layout] : run.shardLayouts) {  // Note [Scaling a trace]: FSDP pads
    SimCollective& c = in.collectives[i];
    const double traced = layout.paddedBytes(run.worldSize);
    if (worldSize == run.worldSize || traced <= 0) continue;
    const double bytes = static_cast<double>(c.bytes) * layout.paddedBytes(worldSize) / traced;
    if (bytes > 1e18) {
      throw ValueError(fmt::format("predict: {}'s shard layout makes it {:.3g} bytes at world {}; "
                                   "the trace's layout is not a real one", c.name, bytes,
                                   worldSize));
    }
    c.bytes = static_cast<int64_t>(std::llround(bytes));
  }
  for (int r = 0; r < worldSize; ++r) in.ranks.push_back(run.programs[r % run.worldSize]);
  return in;
}

}  // namespace distlab::emulator
