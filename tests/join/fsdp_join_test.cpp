// FSDP (fully_shard) under Join with uneven inputs (Note [FSDP under Join] in
// runtime/fsdp/fsdp_join.hpp): 10, 10, 7 and 3 batches on four ranks finish on
// every rank, and the full parameters gathered from the shards equal a
// reference computed here by hand — per step, the gradients of the ranks that
// still have a batch, summed and divided by the initial world size
// (divide_by_initial_world_size = true) or by the number of those ranks
// (false), applied with the same SGD-with-momentum optimizer — for every
// reshardAfterForward kind and both wrappings.
//
// Tolerance 1e-5 (maxRelativeError, ddp_test_util.hpp): FSDP's reduce-scatter
// averages (or, dividing by the active ranks, pre-scales by world / active
// and averages) per-rank float32 gradients in the backend's order where the
// reference sums then divides once: a few ulp per element per step (~1e-7
// relative), which 10 SGD steps keep far below 1e-5 — the bound and reason of
// the FSDP and DDP parity tests for the same model and optimizer. Sharding and
// the joined rank's zero contributions are exact (copies and additions of 0).
//
// Mixed precision (bfloat16 parameters) has no float32 hand reference; it is
// compared exactly (tolerance 0) with the same run without Join in which the
// ranks out of data keep iterating with their loss multiplied by 0: that run
// issues the same collectives with the same operands (its gradients are
// exactly 0) and steps the same optimizer, so the arithmetic is identical.
#include <gtest/gtest.h>

#include <map>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/fsdp/fsdp_join.hpp"
#include "runtime/optim/sgd.hpp"
#include "tests/fsdp/fsdp_test_util.hpp"
#include "runtime/comm/debug/flight_recorder.hpp"
#include "runtime/comm/group_management.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/join/uneven_reference.hpp"
#include "tests/support/test_groups.hpp"

namespace distlab::testing {
namespace {

using std::chrono::seconds;
constexpr double kTol = 1e-5;

// This process's default group (FSDP's reshard-to-N groups are made with
// newGroup, which needs one). The error tests use a plain test group, whose
// timeout error lists the ranks that have not arrived.
comm::ProcessGroupPtr initWorld(const RankContext& ctx, const std::string& backend,
                                seconds timeout) {
  return comm::initProcessGroup({.backend = backend, .store = ctx.store,
                                 .worldSize = ctx.worldSize, .rank = ctx.rank,
                                 .timeout = timeout});
}

// The MLP sharded per block over `group` (a 1-D mesh), and its optimizer.
struct ShardedMlp {
  std::shared_ptr<nn::Module> model;
  fsdp::FSDPModulePtr root;
  std::unique_ptr<optim::SGD> opt;
};
ShardedMlp shardedMlp(const comm::ProcessGroupPtr& group) {
  auto model = makeModel(ModelKind::kMlp);
  fsdp::FullyShardOptions options;
  options.mesh = comm::DeviceMesh::fromGroups({group}, "cpu");
  auto root = shardModel(model, ModelKind::kMlp, Wrap::kPerBlock, options);
  auto opt = unevenSgd(model->parameters());
  return {std::move(model), std::move(root), std::move(opt)};
}

// The full parameters, gathered from the shards (collective), in
// namedParameters() order.
std::vector<Tensor> gatherFull(nn::Module& model, fsdp::FSDPModule& root) {
  std::map<std::string, Tensor> full;
  for (const auto& [fqn, d] : fsdp::shardedStateDict(root)) full[fqn] = d.fullTensor();
  std::vector<Tensor> out;
  for (const auto& [fqn, p] : model.namedParameters()) out.push_back(full.at(fqn));
  return out;
}

struct Case {
  std::string name;
  std::vector<int> batches;
  bool divideByInitial;
  Wrap wrap = Wrap::kPerBlock;
  std::optional<std::variant<bool, int>> reshard;
  std::string backend = "shm";
  int replicas = 1;  // > 1: HSDP over a replicas x (world / replicas) mesh
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

struct RunResult {
  std::vector<Tensor> params;
  int64_t shadowed = 0;
};

// One rank's FSDP training inside a Join; `zeroLossWhenOut` instead runs
// without Join, iterating on with a zero loss once out of batches.
RunResult trainRank(const RankContext& ctx, const comm::ProcessGroupPtr& group, const Case& c,
                    const fsdp::MixedPrecisionPolicy& mp = {}, bool zeroLossWhenOut = false) {
  auto model = makeModel(ModelKind::kMlp);
  fsdp::FullyShardOptions options;
  options.mesh = c.replicas > 1
                     ? comm::initDeviceMesh("cpu", {c.replicas, ctx.worldSize / c.replicas},
                                            {"replicate", "shard"})
                     : comm::DeviceMesh::fromGroups({group}, "cpu");
  options.reshardAfterForward = c.reshard;
  options.mpPolicy = mp;
  auto root = shardModel(model, ModelKind::kMlp, c.wrap, options);
  auto opt = unevenSgd(model->parameters());
  fsdp::FSDPJoinable joinable(*root, opt.get());
  join::JoinOptions jo;
  jo.enable = !zeroLossWhenOut;
  jo.kwargs.flags["divide_by_initial_world_size"] = c.divideByInitial;
  join::Join join({&joinable}, jo);
  const int mine = c.batches[ctx.rank];
  const int steps = zeroLossWhenOut ? *std::max_element(c.batches.begin(), c.batches.end()) : mine;
  for (int step = 0; step < steps; ++step) {
    Batch b = unevenBatch(ctx.worldSize, ctx.rank, std::min(step, mine - 1));
    opt->zeroGrad();
    Tensor loss = lossOf(ModelKind::kMlp, model->forward(b.x), b.y);
    autograd::backward(step < mine ? loss : ops::mul(loss, 0.0));
    opt->step();
  }
  join.exit();
  return {gatherFull(*model, *root), join.shadowedIterations()};
}

std::vector<Case> cases() {
  const std::vector<int> four{10, 10, 7, 3};
  return {
      {"InitialWorldSize", four, true},
      {"EffectiveWorldSize", four, false},
      {"RootOnlyEffective", four, false, Wrap::kRootOnly},
      {"ReshardFalseEffective", four, false, Wrap::kPerBlock, false},
      {"ReshardTrueInitial", four, true, Wrap::kPerBlock, true},
      {"ReshardToTwoEffective", four, false, Wrap::kPerBlock, 2},
      {"ListBlocksInitial", four, true, Wrap::kListBlocks},
      {"ThreeRanks", {2, 6, 4}, false},
      {"GlooTwoRanks", {6, 2}, false, Wrap::kPerBlock, {}, "gloo"},
      {"HsdpEffective", four, false, Wrap::kPerBlock, {}, "shm", 2},
      {"HsdpInitial", four, true, Wrap::kRootOnly, {}, "shm", 2},
  };
}

class FsdpJoinParity : public ::testing::TestWithParam<Case> {};

TEST_P(FsdpJoinParity, MatchesHandReferenceOnEveryRank) {
  const Case& c = GetParam();
  const auto reference = unevenHandReference(c.batches, c.divideByInitial);
  const int world = static_cast<int>(c.batches.size());
  const int most = *std::max_element(c.batches.begin(), c.batches.end());
  spawn(SpawnMode::kProcesses, world, [&](RankContext& ctx) {
    auto group = initWorld(ctx, c.backend, seconds(20));
    RunResult run = trainRank(ctx, group, c);
    EXPECT_EQ(run.shadowed, most - c.batches[ctx.rank]);
    EXPECT_LE(maxRelativeError(run.params, reference), kTol) << "rank " << ctx.rank;
  }, {.timeout = seconds(90)});
}

INSTANTIATE_TEST_SUITE_P(Uneven, FsdpJoinParity, ::testing::ValuesIn(cases()),
                         [](const auto& param) { return param.param.name; });

void trainSteps(const RankContext& ctx, nn::Module& model, optim::Optimizer& opt, int steps) {
  for (int step = 0; step < steps; ++step) {
    Batch b = unevenBatch(ctx.worldSize, ctx.rank, step);
    opt.zeroGrad();
    autograd::backward(lossOf(ModelKind::kMlp, model.forward(b.x), b.y));
    opt.step();
  }
}

// A Joinable after FSDP's that steps the parameters itself (as distlab's ZeRO
// hook does): FSDPJoinable without an optimizer leaves the reduced shard
// gradients in `.grad` for it.
class StepperJoinable : public join::Joinable {
 public:
  StepperJoinable(optim::Optimizer& opt, comm::ProcessGroupPtr group)
      : opt_(opt), group_(std::move(group)) {}
  std::unique_ptr<join::JoinHook> joinHook(const join::JoinKwargs&) override {
    struct Hook : join::JoinHook {
      optim::Optimizer& opt;
      explicit Hook(optim::Optimizer& o) : opt(o) {}
      void mainHook() override { opt.step(); }
    };
    return std::make_unique<Hook>(opt_);
  }
  Device joinDevice() const override { return Device::cpu(); }
  comm::ProcessGroupPtr joinProcessGroup() const override { return group_; }

 private:
  optim::Optimizer& opt_;
  comm::ProcessGroupPtr group_;
};

TEST(FsdpJoinTest, LaterJoinableStepsWithTheReducedGradients) {
  const std::vector<int> batches{10, 10, 7, 3};
  const auto reference = unevenHandReference(batches, /*divideByInitial=*/false);
  spawn(SpawnMode::kProcesses, 4, [&](RankContext& ctx) {
    auto group = initWorld(ctx, "shm", seconds(20));
    auto [model, root, opt] = shardedMlp(group);
    fsdp::FSDPJoinable joinable(*root, nullptr);
    StepperJoinable stepper(*opt, group);
    join::JoinOptions jo;
    jo.kwargs.flags["divide_by_initial_world_size"] = false;
    join::Join join({&joinable, &stepper}, jo);
    trainSteps(ctx, *model, *opt, batches[ctx.rank]);
    join.exit();
    EXPECT_LE(maxRelativeError(gatherFull(*model, *root), reference), kTol) << "rank " << ctx.rank;
  }, {.timeout = seconds(90)});
}

// The two divisors really differ: the runs must not agree with each other.
TEST(FsdpJoinTest, TheTwoDivisorsGiveDifferentModels) {
  const std::vector<int> four{10, 10, 7, 3};
  EXPECT_GT(maxRelativeError(unevenHandReference(four, true),
                             unevenHandReference(four, false)),
            1e-3);
}

// Mixed precision: exactly the zero-loss run without Join (header comment).
TEST(FsdpJoinTest, MixedPrecisionEqualsZeroLossShadowExactly) {
  // Dividing by the initial world: the zero-loss run divides by it too.
  const Case c{"Bf16", {10, 10, 7, 3}, /*divideByInitial=*/true};
  fsdp::MixedPrecisionPolicy mp;
  mp.paramDtype = DType::kBFloat16;
  mp.reduceDtype = DType::kFloat32;
  mp.outputDtype = DType::kFloat32;
  spawn(SpawnMode::kProcesses, 4, [&](RankContext& ctx) {
    auto group = initWorld(ctx, "shm", seconds(20));
    RunResult joined = trainRank(ctx, group, c, mp);
    RunResult shadow = trainRank(ctx, group, c, mp, /*zeroLossWhenOut=*/true);
    EXPECT_EQ(joined.shadowed, 10 - c.batches[ctx.rank]);
    EXPECT_EQ(maxRelativeError(joined.params, shadow.params), 0.0) << "rank " << ctx.rank;
  }, {.timeout = seconds(90)});
}

TEST(FsdpJoinTest, EarlyTerminationThrowsOnEveryRank) {
  const std::vector<int> batches{5, 2, 5};
  spawn(SpawnMode::kProcesses, 3, [&](RankContext& ctx) {
    auto group = initWorld(ctx, "shm", seconds(20));
    auto [model, root, opt] = shardedMlp(group);
    fsdp::FSDPJoinable joinable(*root, opt.get());
    join::Join join({&joinable}, {.throwOnEarlyTermination = true});
    try {
      trainSteps(ctx, *model, *opt, batches[ctx.rank]);
      join.exit();
      ADD_FAILURE() << "no early-termination error on rank " << ctx.rank;
    } catch (const Error& e) {
      EXPECT_EQ(e.what(), ctx.rank == 1 ? std::string("Rank 1 exhausted all inputs.")
                                        : std::string("Detected at least one rank that exhausted "
                                                      "inputs. Throwing across all ranks."));
    }
  }, {.timeout = seconds(60)});
}

// Training steps of `model` on this rank without Join; returns the error text.
std::string trainWithoutJoin(const RankContext& ctx, nn::Module& model, optim::Optimizer& opt,
                             int steps) {
  try {
    trainSteps(ctx, model, opt, steps);
  } catch (const DistError& e) {
    return e.what();
  }
  return "";
}

// A rank of the failure tests below: the failed collectives dump the flight
// recorder into `dumps` (not /tmp); the default group exists because
// fully_shard asks it for the rank; the MLP is sharded on a group of its own.
ShardedMlp failingRank(RankContext& ctx, const TempDir& dumps) {
  comm::setFlightRecorderDumpPrefix(dumps.file("fr_rank_"));
  initWorld(ctx, "shm", seconds(20));
  return shardedMlp(makeTestGroup(ctx, "shm", "fsdp_uneven", seconds(20)));
}

// Without Join the uneven run still ends with an error naming the rank that
// ran out: like the scenario driver, that rank goes on to gather the full
// parameters, whose all-gather meets its peers' next forward all-gather — a
// collective mismatch on every rank, naming rank 2.
TEST(FsdpJoinTest, WithoutJoinEveryRankNamesTheRankThatRanOut) {
  const std::vector<int> batches{4, 4, 2};
  TempDir dumps;
  spawn(SpawnMode::kProcesses, 3, [&](RankContext& ctx) {
    auto [model, root, opt] = failingRank(ctx, dumps);
    std::string error = trainWithoutJoin(ctx, *model, *opt, batches[ctx.rank]);
    if (ctx.rank == 2) {
      EXPECT_EQ(error, "");
      try {
        gatherFull(*model, *root);
      } catch (const DistError& e) {
        error = e.what();
      }
    }
    EXPECT_NE(error.find("Detected mismatch between collectives on ranks"), std::string::npos)
        << "rank " << ctx.rank << ": " << error;
    EXPECT_NE(error.find("but rank 2 runs"), std::string::npos) << "rank " << ctx.rank << ": "
                                                                << error;
  }, {.timeout = seconds(60)});
}

// A rank that joins before completing an iteration has no schedule to shadow:
// an Error naming it there; its process then ends, and its peer's all-gather
// fails within the group timeout instead of hanging.
TEST(FsdpJoinTest, RankWithoutAnIterationIsAClearErrorOnEveryRank) {
  TempDir dumps;
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto [model, root, opt] = failingRank(ctx, dumps);
    fsdp::FSDPJoinable joinable(*root, opt.get());
    std::string error;
    try {
      join::Join join({&joinable});
      if (ctx.rank == 0) trainSteps(ctx, *model, *opt, 3);
      join.exit();
    } catch (const Error& e) {
      error = e.what();
    }
    if (ctx.rank == 1) {
      EXPECT_NE(error.find("rank 1 ran out of inputs before completing a training iteration"),
                std::string::npos) << error;
      return;
    }
    EXPECT_NE(error.find("rank 1 (pid"), std::string::npos) << error;
    EXPECT_NE(error.find("exited while this rank waited for it"), std::string::npos) << error;
  }, {.timeout = seconds(60)});
}

TEST(FsdpJoinTest, NonRootModuleIsRejectedByName) {
  // Processes like every test here: threads left in this process by an
  // in-process world could hold a lock across a later test's fork.
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    initWorld(ctx, "shm", seconds(20));
    auto model = makeModel(ModelKind::kMlp);
    auto root = shardModel(model, ModelKind::kMlp, Wrap::kPerBlock);
    auto inner = fsdp::fsdpModuleOf(*model->child("layers")->child("0"));
    fsdp::FSDPJoinable rootJoinable(*root, nullptr);
    try {
      fsdp::FSDPJoinable joinable(*inner, nullptr);
      ADD_FAILURE() << "a non-root FSDP module was accepted";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("is not a root"), std::string::npos) << e.what();
    }
  }, {.timeout = seconds(60)});
}

}  // namespace
}  // namespace distlab::testing
