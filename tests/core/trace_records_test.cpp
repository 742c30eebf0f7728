// runtime/core/trace_records: events come back as they went in, in order,
// across block boundaries and past a block's size; clear() starts afresh.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "runtime/core/trace_records.hpp"

namespace distlab::trace::detail {
namespace {

Event eventOf(int i, std::string name, std::string args) {
  return Event{i % 2 ? 'X' : 'i', static_cast<Category>(i % 7), static_cast<uint32_t>(i),
               1000 + i, i, static_cast<uint64_t>(i) * 3, std::move(name), std::move(args)};
}

void expectSame(const Event& a, const Event& b) {
  EXPECT_EQ(a.phase, b.phase);
  EXPECT_EQ(a.category, b.category);
  EXPECT_EQ(a.track, b.track);
  EXPECT_EQ(a.tsNs, b.tsNs);
  EXPECT_EQ(a.durNs, b.durNs);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.args, b.args);
}

TEST(TraceRecords, RoundTripAcrossBlocks) {
  RecordStore store;
  std::vector<Event> in;
  // ~100 bytes a record: 30000 of them fill about three 1 MiB blocks.
  for (int i = 0; i < 30000; ++i) {
    in.push_back(eventOf(i, "fsdp all-gather copy-in body.layers." + std::to_string(i),
                         i % 3 ? "\"seq\":" + std::to_string(i) : std::string()));
    store.append(in.back());
  }
  const std::vector<Event> out = store.events();
  ASSERT_EQ(out.size(), in.size());
  EXPECT_EQ(store.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) expectSame(out[i], in[i]);
}

TEST(TraceRecords, RecordLargerThanABlockAndEmbeddedNul) {
  RecordStore store;
  const std::string huge(RecordStore::kBlockBytes + 17, 'a');
  const std::string withNul("a\0b", 3);
  store.append(eventOf(1, "small", withNul));
  store.append(eventOf(2, "huge", huge));
  store.append(eventOf(3, withNul, ""));
  const std::vector<Event> out = store.events();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].args, withNul);
  EXPECT_EQ(out[1].args, huge);
  EXPECT_EQ(out[2].name, withNul);
}

TEST(TraceRecords, ClearForgetsEverything) {
  RecordStore store;
  for (int i = 0; i < 20000; ++i) store.append(eventOf(i, "n", "a"));
  store.clear();
  EXPECT_EQ(store.size(), 0u);
  EXPECT_TRUE(store.events().empty());
  store.append(eventOf(5, "after", "x"));
  const std::vector<Event> out = store.events();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "after");
}

RC_GTEST_PROP(TraceRecordsProperty, AnySequenceRoundTrips,
              (std::vector<std::pair<std::string, std::string>> texts, int64_t ts)) {
  RecordStore store;
  std::vector<Event> in;
  int i = 0;
  for (auto& [name, args] : texts) {
    Event e = eventOf(i++, name, args);
    e.tsNs = ts;
    in.push_back(e);
    store.append(e);
  }
  const std::vector<Event> out = store.events();
  RC_ASSERT(out.size() == in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    RC_ASSERT(out[k].name == in[k].name);
    RC_ASSERT(out[k].args == in[k].args);
    RC_ASSERT(out[k].tsNs == ts);
    RC_ASSERT(out[k].track == in[k].track);
  }
}

}  // namespace
}  // namespace distlab::trace::detail
