// runtime/core/trace: off records nothing, spans nest per thread track,
// virtual tracks take async spans, the Chrome JSON is well formed.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "runtime/core/trace.hpp"
#include "runtime/core/trace_json.hpp"

namespace distlab::trace {
namespace {

class TraceTest : public ::testing::Test {
 protected:
  void TearDown() override {
    stop();
    clear();
  }
};

size_t countNamed(const Snapshot& s, const std::string& name) {
  size_t n = 0;
  for (const auto& e : s.events) n += e.name == name;
  return n;
}

TEST_F(TraceTest, OffRecordsNothing) {
  stop();
  clear();
  {
    Span span(Category::kCompute, "forward ", "Linear");
    span.setArgs("\"x\":1");
    instant(Category::kMark, "mark");
    complete(Category::kCompute, "c", 1, 2);
    asyncSpan(virtualTrack("comm off"), Category::kComm, "allreduce", 1, 1, 2);
  }
  EXPECT_FALSE(enabled());
  EXPECT_TRUE(snapshot().events.empty());
}

TEST_F(TraceTest, SpansNestOnTheThreadTrack) {
  start();
  nameThisThread("compute");
  {
    Span outer(Category::kPhase, "backward");
    { Span inner(Category::kCompute, "backward ", "fc1"); }
    { Span inner(Category::kCompute, "backward ", "fc2"); }
  }
  Snapshot s = snapshot();
  ASSERT_EQ(s.events.size(), 3u);
  std::map<std::string, Event> byName;
  for (const auto& e : s.events) byName[e.name] = e;
  const Event& outer = byName.at("backward");
  for (const char* child : {"backward fc1", "backward fc2"}) {
    const Event& c = byName.at(child);
    EXPECT_EQ(c.track, outer.track);
    EXPECT_EQ(c.category, Category::kCompute);
    EXPECT_GE(c.tsNs, outer.tsNs);
    EXPECT_LE(c.tsNs + c.durNs, outer.tsNs + outer.durNs);
  }
  EXPECT_LE(byName.at("backward fc1").tsNs + byName.at("backward fc1").durNs,
            byName.at("backward fc2").tsNs);
  EXPECT_EQ(s.tracks.at(outer.track).name, "compute");
}

TEST_F(TraceTest, EveryThreadGetsItsOwnTrack) {
  start();
  constexpr int kThreads = 4, kSpans = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      nameThisThread("worker " + std::to_string(t));
      for (int i = 0; i < kSpans; ++i) Span span(Category::kCompute, "work");
    });
  }
  for (auto& t : threads) t.join();
  Snapshot s = snapshot();
  EXPECT_EQ(countNamed(s, "work"), size_t{kThreads * kSpans});
  std::map<uint32_t, int> perTrack;
  for (const auto& e : s.events) ++perTrack[e.track];
  EXPECT_EQ(perTrack.size(), size_t{kThreads});
  for (const auto& [track, n] : perTrack) {
    EXPECT_EQ(n, kSpans);
    EXPECT_EQ(s.tracks.at(track).name.rfind("worker ", 0), 0u) << s.tracks.at(track).name;
  }
}

TEST_F(TraceTest, AsyncSpansGoOnVirtualTracks) {
  start();
  uint32_t comm = virtualTrack("comm default");
  EXPECT_EQ(virtualTrack("comm default"), comm);
  asyncSpan(comm, Category::kComm, "allreduce #1", 1, 100, 300, "\"seq\":1");
  asyncSpan(comm, Category::kComm, "allreduce #2", 2, 200, 400);  // overlaps #1
  Snapshot s = snapshot();
  ASSERT_EQ(s.events.size(), 4u);
  EXPECT_TRUE(s.tracks.at(comm).isVirtual);
  EXPECT_EQ(s.events[0].phase, 'b');
  EXPECT_EQ(s.events[1].phase, 'e');
  EXPECT_EQ(s.events[1].tsNs, 300);
  EXPECT_EQ(s.events[3].id, 2u);
}

TEST_F(TraceTest, ChromeJsonIsWellFormed) {
  start();
  nameThisThread("compute \"main\"");
  { Span span(Category::kCompute, "forward ", "layers.0"); }
  instant(Category::kDdp, "bucket 0 ready", "\"bucket\":0", 5000);
  asyncSpan(virtualTrack("comm g"), Category::kComm, "allreduce #1", 7, 1000, 2500);
  Snapshot s = snapshot();
  ChromeTraceInfo info{1, "rank 1", -3000, 40};
  auto doc = nlohmann::json::parse(chromeTraceJson(s, info));
  EXPECT_EQ(doc["otherData"]["clock_offset_ns"], -3000);
  EXPECT_EQ(doc["otherData"]["clock_bound_ns"], 40);
  int complete = 0, instants = 0, begins = 0, names = 0;
  for (const auto& e : doc["traceEvents"]) {
    EXPECT_EQ(e["pid"], 1);
    const std::string ph = e["ph"];
    if (ph == "M") {
      ++names;
      continue;
    }
    EXPECT_TRUE(e.contains("cat"));
    if (ph == "X") {
      ++complete;
      EXPECT_TRUE(e.contains("dur"));
    } else if (ph == "i") {
      ++instants;
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 2.0);  // 5000 - 3000 ns
    } else if (ph == "b") {
      ++begins;
      EXPECT_EQ(e["id"], "0x7");
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), -2.0);  // 1000 - 3000 ns
    }
  }
  EXPECT_EQ(complete, 1);
  EXPECT_EQ(instants, 1);
  EXPECT_EQ(begins, 1);
  EXPECT_EQ(names, 1 + static_cast<int>(s.tracks.size()));
}

TEST_F(TraceTest, ScopesStackOnlyWhenOn) {
  auto label = std::make_shared<const std::string>("fc1");
  {
    ScopeGuard off(label);
    EXPECT_EQ(currentScope(), nullptr);
  }
  start();
  {
    ScopeGuard outer(label);
    auto inner = std::make_shared<const std::string>("fc1.act");
    {
      ScopeGuard g(inner);
      EXPECT_EQ(*currentScope(), "fc1.act");
    }
    EXPECT_EQ(*currentScope(), "fc1");
  }
  EXPECT_EQ(currentScope(), nullptr);
}

}  // namespace
}  // namespace distlab::trace
