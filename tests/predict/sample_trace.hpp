#pragma once
// A small merged trace as `distlab run --trace` writes it (times in us): two
// ranks, one 10 ms step each; an all_reduce of 4 MB issued at 1 ms, running
// until 3 ms, waited for by a "wait" span from 2 ms; an all-gather of a 1 MB
// shard issued at 5 ms, done at 6 ms, waited for by nobody (a blocking call).
// Note [Programs from a trace] makes each rank's program
//   step begin, busy 1, issue all_reduce, busy 1, wait all_reduce, busy 2,
//   issue all-gather, busy 1, wait all-gather, busy 4, step end   (ms)
#include <nlohmann/json.hpp>
#include <string>

namespace distlab::testing {

inline nlohmann::json sampleTrace() {
  using nlohmann::json;
  json events = json::array();
  for (int pid = 0; pid < 2; ++pid) {
    const auto ev = [&](json e) {
      e["pid"] = pid;
      events.push_back(e);
    };
    ev({{"ph", "M"}, {"name", "process_name"}, {"args", {{"name", "rank"}}}});
    ev({{"ph", "M"}, {"name", "thread_name"}, {"tid", 1}, {"args", {{"name", "compute"}}}});
    ev({{"ph", "X"}, {"cat", "step"}, {"name", "step 0"}, {"tid", 1}, {"ts", 0}, {"dur", 10000}});
    ev({{"ph", "i"}, {"cat", "mark"}, {"name", "issue allreduce #1"}, {"tid", 1}, {"ts", 1000},
        {"args", {{"group", "w1_default"}}}});
    ev({{"ph", "b"}, {"cat", "comm"}, {"name", "allreduce #1"}, {"tid", 7}, {"ts", 1000},
        {"id", "0x1"},
        {"args", {{"group", "w1_default"}, {"seq", 1}, {"bytes", 4000000}, {"ok", true}}}});
    ev({{"ph", "e"}, {"cat", "comm"}, {"name", "allreduce #1"}, {"tid", 7}, {"ts", 3000},
        {"id", "0x1"}});
    ev({{"ph", "X"}, {"cat", "wait"}, {"name", "ddp wait for buckets"}, {"tid", 1},
        {"ts", 2000}, {"dur", 1000}});
    ev({{"ph", "i"}, {"cat", "mark"}, {"name", "issue _allgather_base #2"}, {"tid", 1},
        {"ts", 5000}, {"args", {{"group", "w1_default"}}}});
    ev({{"ph", "b"}, {"cat", "comm"}, {"name", "_allgather_base #2"}, {"tid", 7}, {"ts", 5000},
        {"id", "0x2"},
        {"args", {{"group", "w1_default"}, {"seq", 2}, {"bytes", 1000000}, {"ok", true}}}});
    ev({{"ph", "e"}, {"cat", "comm"}, {"name", "_allgather_base #2"}, {"tid", 7}, {"ts", 6000},
        {"id", "0x2"}});
  }
  return json{{"traceEvents", events}};
}

// The sample's step replayed at world 4 on one node, no latency, 1 GB/s:
// all_reduce 2(3/4) 4 MB = 6 ms from 1 ms, all-gather (3/4) 2 MB = 1.5 ms
// from 9 ms; the step ends at 1 + 1 + 5 (blocked) + 2 + 1 + 0.5 (blocked) + 4.
inline constexpr const char* kSampleTopology = "ranks_per_node=64,intra=0:1,inter=0:1";
inline constexpr double kSampleStepAtWorld4S = 14.5e-3;

}  // namespace distlab::testing
