// CollectiveFingerprint: text form, serialization, the aspects PyTorch names,
// per-peer count cross-checks and culprit selection.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "runtime/comm/debug/collective_fingerprint.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {
namespace {

using ::testing::ElementsAre;

CollectiveFingerprint allreduce(uint64_t seq, Shape shape, DType dtype = DType::kFloat32) {
  CollectiveFingerprint fp;
  fp.opType = OpType::kAllreduce;
  fp.seq = seq;
  fp.tensors.push_back({dtype, DeviceType::kCPU, std::move(shape)});
  fp.reduceOp = "SUM";
  return fp;
}

TEST(CollectiveFingerprint, TextFollowsPyTorch) {
  EXPECT_EQ(allreduce(3, {10}).toString(),
            "CollectiveFingerPrint(SequenceNumber=3, OpType=ALLREDUCE, TensorShape=[10], "
            "TensorDtypes=float32, TensorDeviceTypes=cpu, ReduceOp=SUM)");
  CollectiveFingerprint barrier;
  barrier.opType = OpType::kBarrier;
  barrier.seq = 1;
  EXPECT_EQ(barrier.toString(), "CollectiveFingerPrint(SequenceNumber=1, OpType=BARRIER)");
  auto two = allreduce(2, {2});
  two.tensors.push_back({DType::kInt64, DeviceType::kCPU, {3, 1}});
  EXPECT_EQ(two.toString(),
            "CollectiveFingerPrint(SequenceNumber=2, OpType=ALLREDUCE, TensorShapes=[[2], [3, "
            "1]], TensorDtypes=[float32, int64], TensorDeviceTypes=[cpu, cpu], ReduceOp=SUM)");
}

TEST(CollectiveFingerprint, DifferencesUsePyTorchWording) {
  EXPECT_THAT(fingerprintDifferences(allreduce(2, {10}), allreduce(2, {20})),
              ElementsAre("  Tensor Tensor shapes: [10]vs [20]"));
  EXPECT_THAT(fingerprintDifferences(allreduce(2, {10}), allreduce(2, {10}, DType::kFloat64)),
              ElementsAre("  Tensor Tensor dtypes: float32vs float64"));
  auto bcast = allreduce(2, {10});
  bcast.opType = OpType::kBroadcast;
  EXPECT_THAT(fingerprintDifferences(allreduce(2, {10}), bcast),
              ElementsAre("  Op type: ALLREDUCEvs BROADCAST"));
  EXPECT_THAT(fingerprintDifferences(allreduce(2, {10}), allreduce(3, {10})),
              ElementsAre("\t Sequence number: 2vs 3"));
  auto max = allreduce(2, {10});
  max.reduceOp = "MAX";
  EXPECT_THAT(fingerprintDifferences(allreduce(2, {10}), max),
              ElementsAre("  Reduce op: SUMvs MAX"));
  EXPECT_TRUE(fingerprintDifferences(allreduce(2, {10}), allreduce(2, {10})).empty());
}

TEST(CollectiveFingerprint, UnevenShapesAreNotCompared) {
  auto a = allreduce(1, {3});
  auto b = allreduce(1, {5});
  a.opType = b.opType = OpType::kAllgather;
  a.uniformShapes = b.uniformShapes = false;
  EXPECT_TRUE(fingerprintDifferences(a, b).empty());
}

TEST(CollectiveFingerprint, PeerCountsAreCrossChecked) {
  // allgather on 3 ranks with inputs of 1, 2, 3 elements; rank 1 expects 4 from rank 2.
  std::vector<CollectiveFingerprint> all(3);
  for (int r = 0; r < 3; ++r) {
    all[r].sendCounts.assign(3, r + 1);
    all[r].recvCounts = {1, 2, 3};
  }
  EXPECT_TRUE(peerCountMismatches(all).empty());
  all[1].recvCounts[2] = 4;
  auto m = peerCountMismatches(all);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].describe(),
            "rank 2 sends 3 elements to rank 1, but rank 1 expects 4 from rank 2");
}

TEST(CollectiveFingerprint, CulpritsAreTheMinorityAgainstAStrictMajority) {
  std::vector<CollectiveFingerprint> all{allreduce(1, {2}), allreduce(1, {2}), allreduce(1, {3})};
  EXPECT_THAT(fingerprintCulprits(all), ElementsAre(2));
  EXPECT_TRUE(fingerprintCulprits({allreduce(1, {2}), allreduce(1, {3})}).empty());
}

TEST(CollectiveFingerprint, MalformedTextIsRejected) {
  EXPECT_THROW(CollectiveFingerprint::parse("1|2|3"), DistBackendError);
  EXPECT_THROW(CollectiveFingerprint::parse("x|1|1||-1|-1|0|||"), DistBackendError);
}

RC_GTEST_PROP(CollectiveFingerprint, SerializeParseRoundTrips,
              (uint64_t seq, std::vector<std::vector<uint16_t>> shapes, int root, bool uniform,
               std::vector<int64_t> counts)) {
  CollectiveFingerprint fp;
  fp.opType = OpType::kAlltoallBase;
  fp.seq = seq;
  for (const auto& s : shapes) {
    fp.tensors.push_back({DType::kInt32, DeviceType::kCPU, Shape(s.begin(), s.end())});
  }
  fp.root = root;
  fp.uniformShapes = uniform;
  fp.sendCounts = counts;
  fp.recvCounts = counts;
  fp.reduceOp = "AVG";
  const auto back = CollectiveFingerprint::parse(fp.serialize());
  RC_ASSERT(back.serialize() == fp.serialize());
  RC_ASSERT(back.toString() == fp.toString());
  RC_ASSERT(fingerprintDifferences(fp, back).empty());
}

}  // namespace
}  // namespace distlab::comm
