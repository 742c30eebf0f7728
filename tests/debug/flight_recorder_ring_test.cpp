// The flight recorder's ring is written in place (Note [Flight recorder
// ring]): a reused slot must carry only its new entry's fields, entries come
// back oldest first across the wrap, and a record id that was overwritten is
// no longer updated.
#include <gtest/gtest.h>

#include "runtime/comm/debug/flight_recorder.hpp"

namespace distlab::testing {
namespace {

using comm::FlightRecorder;
using comm::OpType;
using comm::WorkInfo;
using comm::WorkState;

WorkInfo infoFor(OpType op, uint64_t seq, Shape shape, DType dtype, std::string redop) {
  WorkInfo info;
  info.opType = op;
  info.seq = seq;
  info.peer = op == OpType::kSend ? 1 : -1;
  info.tag = op == OpType::kSend ? 7 : 0;
  info.inputs = {{shape, dtype}};
  info.outputs = {{shape, dtype}};
  info.reduceOp = std::move(redop);
  return info;
}

TEST(FlightRecorderRing, AReusedSlotHoldsOnlyItsNewEntry) {
  FlightRecorder fr("g", "desc", {0, 1}, 0, "shm", 2);
  // Two entries with every optional field set: splits, error, timed out.
  for (uint64_t s = 1; s <= 2; ++s) {
    const uint64_t id = fr.record(infoFor(OpType::kAlltoallBase, s, {4, 5, 6}, DType::kInt64, ""),
                                  std::chrono::milliseconds(50), {1, 2}, {3, 4});
    fr.markStarted(id);
    fr.markTimedOut(id);
    fr.markCompleted(id, false, "boom " + std::to_string(s));
  }
  // Two more overwrite both slots.
  const uint64_t a =
      fr.record(infoFor(OpType::kAllreduce, 3, {8}, DType::kFloat32, "SUM"),
                std::chrono::milliseconds(10), {}, {});
  const uint64_t b = fr.record(infoFor(OpType::kSend, 1, {2, 2}, DType::kFloat64, ""),
                               std::chrono::milliseconds(20), {}, {});
  fr.markStarted(a);
  fr.markCompleted(a, true, "");
  const auto entries = fr.entries();
  ASSERT_EQ(entries.size(), 2u);
  const auto& e0 = entries[0];
  EXPECT_EQ(e0.recordId, a);
  EXPECT_EQ(e0.opType, OpType::kAllreduce);
  EXPECT_EQ(e0.seq, 3u);
  EXPECT_EQ(e0.inputs.shapes(), std::vector<Shape>{Shape{8}});
  EXPECT_EQ(e0.outputs.dtypes(), std::vector<DType>{DType::kFloat32});
  EXPECT_EQ(e0.reduceOp, "SUM");
  EXPECT_TRUE(e0.inputSplits.empty());
  EXPECT_TRUE(e0.outputSplits.empty());
  EXPECT_EQ(e0.state, WorkState::kCompleted);
  EXPECT_FALSE(e0.timedOut);
  EXPECT_EQ(e0.error, "");
  EXPECT_EQ(e0.timeoutMs, 10);
  EXPECT_GT(e0.completedNs, 0);
  const auto& e1 = entries[1];
  EXPECT_EQ(e1.recordId, b);
  EXPECT_TRUE(e1.isP2P);
  EXPECT_EQ(e1.peer, 1);
  EXPECT_EQ(e1.tag, 7);
  EXPECT_EQ(e1.inputs.shapes(), std::vector<Shape>{(Shape{2, 2})});
  EXPECT_EQ(e1.reduceOp, "");
  EXPECT_EQ(e1.state, WorkState::kScheduled);
  EXPECT_EQ(e1.startedNs, 0);
  EXPECT_EQ(e1.completedNs, 0);
  EXPECT_EQ(e1.error, "");
  EXPECT_EQ(e1.opId, e0.opId + 1);
}

TEST(FlightRecorderRing, EntriesComeOldestFirstAcrossManyWraps) {
  constexpr size_t kCapacity = 5;
  FlightRecorder fr("g", "desc", {0}, 0, "shm", kCapacity);
  std::vector<uint64_t> ids;
  for (uint64_t s = 1; s <= 23; ++s) {
    ids.push_back(fr.record(infoFor(OpType::kBroadcast, s, {static_cast<int64_t>(s)},
                                    DType::kFloat32, ""),
                            std::chrono::milliseconds(1), {}, {}));
    const auto entries = fr.entries();
    ASSERT_EQ(entries.size(), std::min<size_t>(s, kCapacity));
    for (size_t i = 0; i < entries.size(); ++i) {
      const uint64_t seq = s - entries.size() + 1 + i;
      EXPECT_EQ(entries[i].seq, seq);
      EXPECT_EQ(entries[i].inputs.shapes(), std::vector<Shape>{Shape{static_cast<int64_t>(seq)}});
      EXPECT_EQ(entries[i].recordId, ids[seq - 1]);
    }
  }
  // An overwritten record is gone: updating it changes nothing.
  fr.markCompleted(ids.front(), false, "late");
  for (const auto& e : fr.entries()) EXPECT_EQ(e.error, "");
  EXPECT_EQ(fr.status().lastEnqueued, 23u);
  EXPECT_EQ(fr.status().lastCompleted, 0u);
}

TEST(FlightRecorderRing, ZeroCapacityRecordsNothing) {
  FlightRecorder fr("g", "desc", {0}, 0, "shm", 0);
  EXPECT_EQ(fr.record(infoFor(OpType::kBarrier, 1, {}, DType::kUInt8, ""),
                      std::chrono::milliseconds(1), {}, {}),
            0u);
  EXPECT_TRUE(fr.entries().empty());
}

}  // namespace
}  // namespace distlab::testing
