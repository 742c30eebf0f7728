// FSDP state dicts: the sharded state dict needs no communication and shares
// storage with the shards; the full one equals the parameters; a checkpoint
// saved at 4 ranks and loaded at 2 (model and optimizer state) continues
// training exactly like uninterrupted training (1e-5, the parity tolerance of
// fsdp_parity_test.cpp: only the reduction order differs); a checkpoint of
// another model is refused naming the parameter. A root made from a list of
// modules saves and loads every module's parameters.
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/comm/group_management.hpp"

#include "runtime/core/errors.hpp"
#include "tests/fsdp/fsdp_test_util.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::testing {
namespace {

TEST(FsdpStateDict, ShardedIsLocalAndFullMatchesParameters) {
  withWorld(2, [](RankContext& ctx) {
    auto model = makeModel(ModelKind::kGpt);
    auto reference = copies(model->parameters());
    auto root = shardModel(model, ModelKind::kGpt, Wrap::kPerBlock);
    const int64_t before = root->commCounts().allGathers;
    fsdp::ShardedStateDict sd = fsdp::shardedStateDict(*root);
    EXPECT_EQ(root->commCounts().allGathers, before);
    ASSERT_EQ(sd.size(), model->stateDict().size());
    EXPECT_EQ(sd[0].first, "wte.weight");
    EXPECT_TRUE(sd[0].second.toLocal().sharesStorageWith(model->child("wte")->param("weight")));
    nn::StateDict full = fsdp::fullStateDict(*root, 0);
    EXPECT_EQ(full.empty(), ctx.rank != 0);
    if (ctx.rank == 0) {
      size_t i = 0;
      for (const auto& [fqn, t] : model->namedParameters()) {
        EXPECT_TRUE(full.at(fqn).equal(reference[i++])) << fqn;
      }
    }
  });
}

TEST(FsdpStateDict, SavedAtFourLoadedAtTwoContinuesIdentically) {
  for (OptimKind optim : {OptimKind::kSgd, OptimKind::kAdamW}) {
    TrainConfig config;
    config.optim = optim;
    config.model = ModelKind::kGpt;
    const auto reference = trainReference(config, 4);  // 10 steps of 16 rows
    TempDir dir;
    withWorld(4, [&](RankContext& ctx) {
      auto model = makeModel(config.model);
      auto root = shardModel(model, config.model, Wrap::kPerBlock);
      auto opt = makeOptimizer(optim, model->parameters(), config.lr);
      for (int step = 0; step < 5; ++step) trainStep(ctx, *model, *opt, config, step);
      fsdp::saveShardedStateDict(*root, dir.path(), opt.get());
    });
    withWorld(2, [&](RankContext& ctx) {
      auto model = makeModel(config.model, /*seed=*/99);  // different initial values
      auto root = shardModel(model, config.model, Wrap::kPerBlock);
      auto opt = makeOptimizer(optim, model->parameters(), config.lr);
      fsdp::loadShardedStateDictFromDir(*root, dir.path(), opt.get());
      TrainConfig twice = config;
      twice.perRank = 8;  // the same 16-row global batches
      for (int step = 5; step < 10; ++step) trainStep(ctx, *model, *opt, twice, step);
      EXPECT_LE(maxRelativeError(fullParameters(*root), reference), 1e-5);
    });
  }
}

// The MLP's three Linears as one list group, fullyShard({layers.0, layers.2,
// layers.4}), which is the root (the model itself is not sharded).
fsdp::FSDPModulePtr shardAsList(const std::shared_ptr<nn::Module>& model) {
  auto layers = model->child("layers");
  return fsdp::fullyShard({layers->child("0"), layers->child("2"), layers->child("4")});
}

// Every parameter of every module of a list root round-trips: the state dict
// names them "modules[i].<fqn>", the checkpoint saved at 4 ranks loads at 2
// into a differently initialised model bitwise, and training continues like
// uninterrupted training (1e-5, as above).
TEST(FsdpStateDict, ListRootRoundTripsEveryModule) {
  for (OptimKind optim : {OptimKind::kSgd, OptimKind::kAdamW}) {
    TrainConfig config;
    config.optim = optim;
    const auto reference = trainReference(config, 4);
    std::vector<Tensor> saved;
    TempDir dir;
    withWorld(4, [&](RankContext& ctx) {
      auto model = makeModel(config.model);
      auto root = shardAsList(model);
      auto opt = makeOptimizer(optim, model->parameters(), config.lr);
      for (int step = 0; step < 5; ++step) trainStep(ctx, *model, *opt, config, step);
      fsdp::ShardedStateDict sd = fsdp::shardedStateDict(*root);
      ASSERT_EQ(sd.size(), model->stateDict().size());
      EXPECT_EQ(sd.back().first, "modules[2].bias");
      fsdp::saveShardedStateDict(*root, dir.path(), opt.get());
      std::vector<Tensor> full = fullParameters(*root);
      if (ctx.rank == 0) saved = full;
    });
    ASSERT_EQ(saved.size(), 6u);  // three weights, three biases
    withWorld(2, [&](RankContext& ctx) {
      auto model = makeModel(config.model, /*seed=*/99);
      auto root = shardAsList(model);
      auto opt = makeOptimizer(optim, model->parameters(), config.lr);
      const std::vector<Tensor> before = fullParameters(*root);
      fsdp::loadShardedStateDictFromDir(*root, dir.path(), opt.get());
      const std::vector<Tensor> loaded = fullParameters(*root);
      const nn::NamedTensors names = fsdp::rootNamedParameters(*root);
      for (size_t i = 0; i < saved.size(); ++i) {
        EXPECT_FALSE(before[i].equal(saved[i])) << names[i].first;
        EXPECT_TRUE(loaded[i].equal(saved[i])) << names[i].first;
      }
      TrainConfig twice = config;
      twice.perRank = 8;  // the same 16-row global batches
      for (int step = 5; step < 10; ++step) trainStep(ctx, *model, *opt, twice, step);
      EXPECT_LE(maxRelativeError(fullParameters(*root), reference), 1e-5);
    });
  }
}

TEST(FsdpStateDict, CheckpointOfAnotherModelIsRefused) {
  TempDir dir;
  withWorld(2, [&](RankContext&) {
    auto mlp = makeModel(ModelKind::kMlp);
    auto root = shardModel(mlp, ModelKind::kMlp, Wrap::kRootOnly);
    fsdp::saveShardedStateDict(*root, dir.path());
    auto gpt = makeModel(ModelKind::kGpt);
    auto gptRoot = shardModel(gpt, ModelKind::kGpt, Wrap::kRootOnly);
    try {
      fsdp::loadShardedStateDictFromDir(*gptRoot, dir.path());
      ADD_FAILURE() << "a checkpoint of another model was accepted";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("'wte.weight' is not in the checkpoint"),
                std::string::npos) << e.what();
    }
    EXPECT_THROW(fsdp::loadShardedStateDictFromDir(*gptRoot, dir.path() + "/missing"), ValueError);
    // A truncated rank file is refused naming the file, not read past its end.
    comm::defaultGroup()->barrier()->wait();
    if (comm::getRank() == 0) std::filesystem::resize_file(dir.file("rank1.bin"), 100);
    comm::defaultGroup()->barrier()->wait();
    try {
      fsdp::loadShardedStateDictFromDir(*root, dir.path());
      ADD_FAILURE() << "a truncated checkpoint was accepted";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("rank1.bin is truncated"), std::string::npos)
          << e.what();
    }
  });
}

}  // namespace
}  // namespace distlab::testing
