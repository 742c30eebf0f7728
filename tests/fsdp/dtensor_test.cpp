// DTensor: chunking (padding, empty shards), distribute / fromLocal / fullTensor
// / redistribute on 1-D and 2-D meshes over real shm process groups (ranks as
// threads). Values are small integers: exact in float32.
#include <gtest/gtest.h>

#include "runtime/core/errors.hpp"
#include "runtime/dtensor/dtensor.hpp"
#include "tests/fsdp/fsdp_test_util.hpp"

namespace distlab::testing {
namespace {

using dtensor::DTensor;
using dtensor::Placement;

TEST(Placement, ChunksLikeTorchChunkWithEmptyTail) {
  EXPECT_EQ(dtensor::chunkLength(5, 4), 2);
  std::vector<int64_t> lengths;
  for (int r = 0; r < 4; ++r) lengths.push_back(dtensor::shardSpan(5, 4, r).length);
  EXPECT_EQ(lengths, (std::vector<int64_t>{2, 2, 1, 0}));
  EXPECT_EQ(dtensor::shardSpan(5, 4, 2).offset, 4);
  EXPECT_EQ(dtensor::shardSpan(2, 3, 2).length, 0);
  EXPECT_EQ(dtensor::shardSpan(0, 3, 0).length, 0);
  EXPECT_EQ(Placement::shard(1).str(), "Shard(1)");
  EXPECT_EQ(Placement::replicate().str(), "Replicate()");
}

Tensor globalTensor(int64_t rows, int64_t cols) {
  return arange(0, static_cast<double>(rows * cols), 1).view({rows, cols});
}

TEST(DTensor, ShardZeroWithPaddingAndEmptyShardsRoundTrips) {
  withWorld(3, [](RankContext& ctx) {
    comm::DeviceMesh mesh = comm::initDeviceMesh("cpu", {3});
    for (int64_t rows : {7, 2, 3}) {  // 3,3,1 / 1,1,0 / 1,1,1
      Tensor full = globalTensor(rows, 2);
      DTensor d = DTensor::distribute(full, mesh, {Placement::shard(0)});
      auto span = dtensor::shardSpan(rows, 3, ctx.rank);
      EXPECT_EQ(d.toLocal().sizes(), (Shape{span.length, 2}));
      EXPECT_TRUE(d.toLocal().equal(full.narrow(0, span.offset, span.length)));
      EXPECT_TRUE(d.fullTensor().equal(full));
    }
  });
}

TEST(DTensor, ShardOnDimOneAndRedistribute) {
  withWorld(2, [](RankContext& ctx) {
    comm::DeviceMesh mesh = comm::initDeviceMesh("cpu", {2});
    Tensor full = globalTensor(3, 5);
    DTensor s1 = DTensor::distribute(full, mesh, {Placement::shard(1)});
    EXPECT_EQ(s1.toLocal().sizes(), (Shape{3, ctx.rank == 0 ? 3 : 2}));
    DTensor rep = s1.redistribute({Placement::replicate()});
    EXPECT_TRUE(rep.toLocal().equal(full));
    DTensor s0 = s1.redistribute({Placement::shard(0)});
    EXPECT_TRUE(s0.toLocal().equal(full.narrow(0, ctx.rank * 2, ctx.rank == 0 ? 2 : 1)));
    DTensor back = rep.redistribute({Placement::shard(0)});  // local, no communication
    EXPECT_TRUE(back.toLocal().equal(s0.toLocal()));
    EXPECT_FALSE(back.toLocal().sharesStorageWith(rep.toLocal()));
  });
}

TEST(DTensor, TwoDimMeshReplicateShard) {
  withWorld(4, [](RankContext& ctx) {
    comm::DeviceMesh mesh = comm::initDeviceMesh("cpu", {2, 2}, {"replicate", "shard"});
    Tensor full = globalTensor(5, 3);
    DTensor d = DTensor::distribute(full, mesh, {Placement::replicate(), Placement::shard(0)});
    const int shardRank = ctx.rank % 2;
    EXPECT_EQ(d.toLocal().size(0), shardRank == 0 ? 3 : 2);
    EXPECT_EQ(d.localSpan(0).offset, shardRank == 0 ? 0 : 3);
    EXPECT_TRUE(d.fullTensor().equal(full));
  });
}

TEST(DTensor, BadLayoutsAreValueErrors) {
  withWorld(2, [](RankContext&) {
    comm::DeviceMesh mesh = comm::initDeviceMesh("cpu", {2});
    Tensor full = globalTensor(4, 2);
    EXPECT_THROW(DTensor::distribute(full, mesh, {}), ValueError);
    EXPECT_THROW(DTensor::distribute(full, mesh, {Placement::shard(2)}), ValueError);
    EXPECT_THROW(DTensor::fromLocal(zeros({3, 2}), mesh, {Placement::shard(0)}, {4, 2}),
                 ValueError);
    DTensor ok = DTensor::fromLocal(zeros({2, 2}), mesh, {Placement::shard(0)}, {4, 2});
    EXPECT_EQ(ok.shape(), (Shape{4, 2}));
  });
}

}  // namespace
}  // namespace distlab::testing
