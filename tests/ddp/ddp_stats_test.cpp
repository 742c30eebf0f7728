// DDP statistics: construction data and its log format (§22.2), runtime
// samples and their log format (§22.3), per-bucket timestamps.
#include <gtest/gtest.h>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/nn/models/two_layer_net.hpp"
#include "tests/ddp/ddp_test_util.hpp"

namespace distlab::testing {
namespace {

using ddp::DistributedDataParallel;

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(DdpStatsTest, InitDataOfTheDocumentsTwoLinLayerNet) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    Generator gen(1);
    DistributedDataParallel ddp(std::make_shared<nn::TwoLinLayerNet>(gen), group);
    const auto d = ddp.loggingData();
    EXPECT_EQ(d.bucketCapBytes, 26214400);
    EXPECT_EQ(d.numParameterTensors, 2);
    EXPECT_EQ(d.totalParameterSizeBytes, 440);
    EXPECT_EQ(d.bucketSizes, std::vector<int64_t>{440});
    EXPECT_EQ(d.moduleName, "TwoLinLayerNet");
    EXPECT_EQ(d.dtypes, "float");
    EXPECT_EQ(d.backendName, "shm");
    EXPECT_EQ(d.iteration, 0);
    const std::string log = ddp::formatInitLog(d);
    for (const std::string& line :
         {"[Rank " + std::to_string(ctx.rank) + "]: DDP Initialized with:\n",
          std::string("broadcast_buffers: 1\n"), std::string("bucket_cap_bytes: 26214400\n"),
          std::string("find_unused_parameters: 0\n"), std::string("gradient_as_bucket_view: 0\n"),
          std::string("num_parameter_tensors: 2\n"), std::string("total_parameter_size_bytes: 440\n"),
          std::string("world_size: 2\n"), std::string("backend_name: shm\n"),
          std::string("bucket_sizes: 440\n"), std::string("dtypes: float\n"),
          std::string("module_name: TwoLinLayerNet\n")}) {
      EXPECT_TRUE(contains(log, line)) << line << "\nin:\n" << log;
    }
    EXPECT_EQ(d.toMap().at("bucket_cap_bytes"), "26214400");
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(DdpStatsTest, SamplingRuleAndRuntimeLogFormat) {
  for (int64_t i : {1, 5, 10, 100, 200}) EXPECT_TRUE(ddp::shouldSampleIteration(i)) << i;
  for (int64_t i : {0, 11, 99, 150}) EXPECT_FALSE(ddp::shouldSampleIteration(i)) << i;
  ddp::DDPLoggingData d;
  d.rank = 1;
  d.worldSize = 2;
  d.moduleName = "TwoLinLayerNet";
  ddp::IterationTiming t;
  t.forwardComputeStartNs = 100;
  t.backwardComputeStartNs = 400;   // forward 300
  t.backwardCommStartNs = 500;
  t.backwardComputeEndNs = 900;     // backward compute 500, overlap 400
  t.backwardCommEndNs = 1100;       // comm 600
  ddp::recordSample(d, t);
  t.forwardComputeStartNs = 0;      // forward 400 -> average 350
  ddp::recordSample(d, t);
  EXPECT_EQ(d.numIterationsStatsRecorded, 2);
  EXPECT_EQ(d.avgForwardComputeTime, 350);
  EXPECT_EQ(d.avgBackwardComputeTime, 500);
  EXPECT_EQ(d.avgBackwardCommTime, 600);
  EXPECT_EQ(d.avgBackwardComputeCommOverlapTime, 400);
  EXPECT_EQ(ddp::formatRuntimeLog(d),
            "[Rank 1 / 2] Training TwoLinLayerNet unused_parameter_size=0\n Avg forward compute "
            "time: 350\n Avg backward compute time: 500\nAvg backward comm. time: 600\n Avg "
            "backward comm/comp overlap time: 400");
}

TEST(DdpStatsTest, PerIterationAndPerBucketTimestampsAreOrdered) {
  spawn(SpawnMode::kThreads, 3, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    auto model = makeModel(ModelKind::kMlp);
    ddp::DDPOptions o;
    o.bucketCapMb = 0.0003;
    DistributedDataParallel ddp(model, group, o);
    for (int step = 0; step < 4; ++step) {
      Batch b = shard(globalBatch(ModelKind::kMlp, 12, step), ctx.rank, 4);
      autograd::backward(lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y));
    }
    const auto d = ddp.loggingData();
    EXPECT_EQ(d.iteration, 4);
    EXPECT_EQ(d.numIterationsStatsRecorded, 3);  // iterations 1-3 rolled in at forwards 2-4
    EXPECT_GT(d.avgBackwardComputeTime, 0);
    EXPECT_GT(d.avgBackwardCommTime, 0);
    EXPECT_TRUE(d.canSetStaticGraph);
    const auto& t = d.lastIteration;
    EXPECT_TRUE(t.complete());
    EXPECT_LT(t.forwardComputeStartNs, t.backwardComputeStartNs);
    EXPECT_LE(t.backwardComputeStartNs, t.backwardCommStartNs);
    EXPECT_LE(t.backwardCommStartNs, t.backwardComputeEndNs);
    EXPECT_LE(t.backwardComputeEndNs, t.backwardCommEndNs);
    EXPECT_LE(t.overlapNs(), t.backwardCommNs());
    ASSERT_GT(d.lastBucketTimings.size(), 1u);
    int64_t bytes = 0, previousLaunch = 0;
    for (const auto& b : d.lastBucketTimings) {
      EXPECT_TRUE(b.communicated);
      EXPECT_GT(b.readyNs, 0);
      EXPECT_GE(b.launchedNs, b.readyNs);
      EXPECT_GE(b.completedNs, b.launchedNs);
      EXPECT_LE(b.completedNs, t.backwardCommEndNs);
      EXPECT_GE(b.launchedNs, previousLaunch);  // launched in index order
      previousLaunch = b.launchedNs;
      bytes += b.bytes;
    }
    EXPECT_EQ(bytes, d.totalParameterSizeBytes);
    group->shutdown(std::chrono::seconds(5));
  });
}

}  // namespace
}  // namespace distlab::testing
