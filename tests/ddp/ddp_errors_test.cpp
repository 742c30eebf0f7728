// Every DDP error path, checking PyTorch's texts (docs/pytorch-semantics.md,
// "DDP error texts").
#include <gtest/gtest.h>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/core/debug_level.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/ddp/comm_hooks/default_hooks.hpp"
#include "runtime/ddp/comm_hooks/powersgd_hook.hpp"
#include "runtime/nn/containers.hpp"
#include "runtime/nn/layers.hpp"
#include "runtime/nn/models/two_layer_net.hpp"
#include "tests/ddp/ddp_test_util.hpp"

namespace distlab::testing {
namespace {

using ddp::DDPOptions;
using ddp::DistributedDataParallel;

// The message of the Error `fn` throws ("" when none).
std::string errorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// Restores the process-wide debug level after a test.
class DebugLevelScope {
 public:
  explicit DebugLevelScope(DebugLevel level) : previous_(debugLevel()) { setDebugLevel(level); }
  ~DebugLevelScope() { setDebugLevel(previous_); }

 private:
  DebugLevel previous_;
};

std::shared_ptr<nn::Module> linearStack(const std::vector<std::pair<int64_t, int64_t>>& dims) {
  Generator gen(7);
  auto seq = std::make_shared<nn::Sequential>();
  for (auto [in, out] : dims) seq->push_back(std::make_shared<nn::Linear>(in, out, gen, false));
  return seq;
}

Tensor input10(int rows = 4) {
  Generator gen(3);
  return randn({rows, 10}, gen);
}

TEST(DdpErrorsTest, DifferentParameterCountAcrossRanks) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    auto model = ctx.rank == 0 ? linearStack({{10, 10}, {10, 1}})
                               : linearStack({{10, 10}, {10, 10}, {10, 1}});
    const std::string msg = errorOf([&] { DistributedDataParallel ddp(model, group); });
    EXPECT_TRUE(contains(msg, "DDP expects same model across all ranks, but Rank " +
                                  std::to_string(ctx.rank) + " has " +
                                  (ctx.rank == 0 ? "2 params, while rank 1 has inconsistent 3 params."
                                                 : "3 params, while rank 0 has inconsistent 2 params.")))
        << msg;
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(DdpErrorsTest, DifferentParameterShapeAcrossRanks) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    auto model = linearStack({{10, ctx.rank == 0 ? 10 : 11}, {ctx.rank == 0 ? 10 : 11, 1}});
    const std::string msg = errorOf([&] { DistributedDataParallel ddp(model, group); });
    const std::string where = ctx.rank == 1 ? "this process" : "process 1";
    EXPECT_EQ(msg, "[" + std::to_string(ctx.rank) + "]: params[0] in " + where +
                       " with sizes [11, 10] appears not to match sizes of the same param in "
                       "process 0.");
    group->shutdown(std::chrono::seconds(5));
  });
}

// The documents' TwoLinLayerNet with loss = output[1]: a.weight gets no grad.
void runUnusedWithoutDetection(DebugLevel level, bool staticGraph, bool findUnused,
                               const std::vector<std::string>& needles,
                               const std::vector<std::string>& absent) {
  DebugLevelScope scope(level);
  spawn(SpawnMode::kThreads, 2, [&](RankContext& ctx) {
    auto group = makeGroup(ctx);
    Generator gen(1);
    auto model = std::make_shared<nn::TwoLinLayerNet>(gen);
    DDPOptions o;
    o.staticGraph = staticGraph;
    o.findUnusedParameters = findUnused;
    DistributedDataParallel ddp(model, group, o);
    auto step = [&](bool useBoth) {
      auto out = ddp.call({input10()});
      Tensor loss = ops::sum(out[1]);
      if (useBoth) loss = ops::add(loss, ops::sum(out[0]));
      autograd::backward(loss);
    };
    // static_graph: the first iteration uses both, the second changes the graph.
    if (staticGraph) step(true);
    step(false);
    const std::string msg = errorOf([&] { step(false); });
    for (const auto& n : needles) {
      std::string needle = n;
      for (auto pos = needle.find("<r>"); pos != std::string::npos; pos = needle.find("<r>")) {
        needle.replace(pos, 3, std::to_string(ctx.rank));
      }
      EXPECT_TRUE(contains(msg, needle)) << "missing: " << needle << "\nin: " << msg;
    }
    for (const auto& n : absent) EXPECT_FALSE(contains(msg, n)) << n;
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(DdpErrorsTest, UnusedParameterDebugOffListsIndices) {
  runUnusedWithoutDetection(
      DebugLevel::kOff, false, false,
      {"Expected to have finished reduction in the prior iteration before starting a new one. "
       "This error indicates that your module has parameters that were not used in producing "
       "loss. You can enable unused parameter detection by passing the keyword argument "
       "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
       "making sure all `forward` function outputs participate in calculating loss. \nIf you "
       "already have done the above, then the distributed data parallel module wasn't able to "
       "locate the output tensors in the return value of your module's `forward` function.",
       "\nParameter indices which did not receive grad for rank <r>: 0",
       "\n In addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either "
       "INFO or DETAIL"},
      {"Parameters which did not receive grad"});
}

TEST(DdpErrorsTest, UnusedParameterDebugInfoAddsNames) {
  runUnusedWithoutDetection(
      DebugLevel::kInfo, false, false,
      {"\nParameters which did not receive grad for rank <r>: a.weight"
       "\nParameter indices which did not receive grad for rank <r>: 0"},
      {"In addition, you can set"});
}

TEST(DdpErrorsTest, UnusedParameterWithFindUnusedButOutputNotInLoss) {
  runUnusedWithoutDetection(
      DebugLevel::kOff, false, true,
      {"Since `find_unused_parameters=True` is enabled, this likely  means that not all "
       "`forward` outputs participate in computing loss.",
       "rank <r>: 0"},
      {});
}

TEST(DdpErrorsTest, StaticGraphChangedBetweenIterations) {
  runUnusedWithoutDetection(
      DebugLevel::kOff, true, false,
      {"This error indicates that your training graph has changed in this iteration, e.g., one "
       "parameter is used in first iteration, but then got unused in the second iteration. this "
       "is not compatible with static_graph set to True.",
       "rank <r>: 0"},
      {});
}

// A module returning only b(x): with find_unused, a.weight is marked unused;
// using it outside forward marks it ready a second time.
class OnlyB : public nn::Module {
 public:
  OnlyB() : nn::Module("OnlyB") {
    Generator gen(2);
    a_ = registerModule("a", std::make_shared<nn::Linear>(10, 10, gen, false));
    b_ = registerModule("b", std::make_shared<nn::Linear>(10, 1, gen, false));
  }
  nn::TensorList forwardAll(const nn::TensorList& in) override { return b_->call(in); }
  const Tensor& aWeight() const { return a_->param("weight"); }

 private:
  std::shared_ptr<nn::Linear> a_, b_;
};

TEST(DdpErrorsTest, MarkedReadyTwice) {
  for (DebugLevel level : {DebugLevel::kOff, DebugLevel::kDetail}) {
    DebugLevelScope scope(level);
    spawn(SpawnMode::kThreads, 2, [&](RankContext& ctx) {
      auto group = makeGroup(ctx);
      auto model = std::make_shared<OnlyB>();
      DDPOptions o;
      o.findUnusedParameters = true;
      DistributedDataParallel ddp(model, group, o);
      const std::string msg = errorOf([&] {
        Tensor out = ddp.forward(input10());
        autograd::backward(ops::add(ops::sum(out), ops::sum(model->aWeight())));
      });
      EXPECT_TRUE(contains(msg, "Expected to mark a variable ready only once. This error is "
                                "caused by one of the following reasons: 1) Use of a module "
                                "parameter outside the `forward` function."))
          << msg;
      EXPECT_TRUE(contains(msg, "3) Incorrect unused parameter detection.")) << msg;
      const std::string info = level == DebugLevel::kOff
                                   ? "Parameter at index 0 has been marked as ready twice."
                                   : "Parameter at index 0 with name a.weight has been marked "
                                     "as ready twice. This means that multiple autograd engine "
                                     " hooks have fired for this particular parameter during "
                                     "this iteration.";
      EXPECT_TRUE(contains(msg, info)) << msg;
      group->shutdown(std::chrono::seconds(5));
    });
  }
}

// Fault "skipped backward": the peer never launches its bucket, so this rank's
// wait ends at the group timeout with an error naming the bucket.
TEST(DdpErrorsTest, PeerSkippingBackwardTimesOutNamingTheBucket) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto group = makeGroup(ctx, "skip", std::chrono::milliseconds(1000));
    DistributedDataParallel ddp(makeModel(ModelKind::kMlp), group);
    Batch b = shard(globalBatch(ModelKind::kMlp, 8, 0), ctx.rank, 4);
    Tensor loss = lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y);
    if (ctx.rank == 0) {
      std::string msg;
      try {
        autograd::backward(loss);
      } catch (const DistTimeoutError& e) {
        msg = e.what();
      }
      EXPECT_TRUE(contains(msg, "DDP (rank 0, group 'skip'): bucket 0 of 1 (")) << msg;
      EXPECT_TRUE(contains(msg, "of iteration 1 did not complete within 1000 ms; a peer may "
                                "have skipped backward"))
          << msg;
      ctx.store->add("rank0_checked", 1);
    } else {
      ctx.store->wait({"rank0_checked"});  // stay alive so rank 0 sees a timeout
    }
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(DdpErrorsTest, CommHookOnlyOnceAndBeforeFirstBackward) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    DistributedDataParallel ddp(makeModel(ModelKind::kMlp), group);
    ddp.registerCommHook({}, ddp::allreduceHook, "allreduce_hook");
    EXPECT_EQ(errorOf([&] { ddp.registerCommHook({}, ddp::noopHook, "noop"); }),
              "register_comm_hook or register_builtin_comm_hook can only be called once.");
    DistributedDataParallel late(makeModel(ModelKind::kMlp), group);
    Batch b = globalBatch(ModelKind::kMlp, 4, 0);
    autograd::backward(lossOf(ModelKind::kMlp, late.forward(b.x), b.y));
    EXPECT_TRUE(contains(errorOf([&] { late.registerCommHook({}, ddp::noopHook, "noop"); }),
                         "register_comm_hook must be called before the first forward/backward "
                         "pass; 1 iteration(s) already ran"));
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(DdpErrorsTest, HookReturningWrongShapeIsReported) {
  spawn(SpawnMode::kThreads, 2, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    DistributedDataParallel ddp(makeModel(ModelKind::kMlp), group);
    ddp.registerCommHook(
        {},
        [](const ddp::HookState&, ddp::GradBucket& bucket) {
          return comm::Future::completed({bucket.buffer().narrow(0, 0, 3)});
        },
        "bad_hook");
    Batch b = globalBatch(ModelKind::kMlp, 4, 0);
    const std::string msg = errorOf([&] {
      autograd::backward(lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y));
    });
    EXPECT_TRUE(contains(msg, "DDP communication hook 'bad_hook': the Future of bucket 0 must "
                              "hold a single tensor shaped like the bucket"))
        << msg;
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(DdpErrorsTest, ConstructionInputErrors) {
  spawn(SpawnMode::kThreads, 1, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    auto frozen = linearStack({{10, 1}});
    for (Tensor p : frozen->parameters()) p.setRequiresGrad(false);
    EXPECT_EQ(errorOf([&] { DistributedDataParallel d(frozen, group); }),
              "DistributedDataParallel is not needed when a module doesn't have any parameter "
              "that requires a gradient.");
    DDPOptions o;
    o.delayAllReduceNamedParams = {"nope.weight"};
    o.paramToHookAllReduce = "0.weight";
    EXPECT_TRUE(contains(errorOf([&] { DistributedDataParallel d(linearStack({{10, 1}}), group, o); }),
                         "delay_all_reduce_named_params names 'nope.weight', which is not a "
                         "parameter of the module requiring grad (parameters: 0.weight)"));
    DDPOptions bad;
    bad.bucketCapMb = -1;
    EXPECT_TRUE(contains(errorOf([&] { DistributedDataParallel d(linearStack({{10, 1}}), group, bad); }),
                         "bucket_cap_mb=-1 is invalid"));
    group->shutdown(std::chrono::seconds(5));
  });
}

TEST(DdpErrorsTest, PowerSgdStateRejectsEarlyStart) {
  ddp::PowerSGDOptions o;
  o.startPowerSGDIter = 1;
  EXPECT_EQ(errorOf([&] { ddp::PowerSGDState s(nullptr, o); }),
            "Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is "
            "enabled, because PowerSGD can only be applied after the first two iterations in DDP.");
  o.useErrorFeedback = false;
  o.warmStart = false;
  EXPECT_EQ(errorOf([&] { ddp::PowerSGDState s(nullptr, o); }), "");
  o.matrixApproximationRank = 0;
  EXPECT_TRUE(contains(errorOf([&] { ddp::PowerSGDState s(nullptr, o); }),
                       "matrix_approximation_rank=0 must be at least 1"));
}

TEST(DdpErrorsTest, WrongHookStateType) {
  spawn(SpawnMode::kThreads, 1, [](RankContext& ctx) {
    auto group = makeGroup(ctx);
    DistributedDataParallel ddp(makeModel(ModelKind::kMlp), group);
    ddp.registerCommHook(ddp::HookState(std::string("oops")), ddp::powerSgdHook, "powerSGD");
    Batch b = globalBatch(ModelKind::kMlp, 4, 0);
    EXPECT_EQ(errorOf([&] { autograd::backward(lossOf(ModelKind::kMlp, ddp.forward(b.x), b.y)); }),
              "powerSgdHook: the hook state must be a std::shared_ptr<PowerSGDState> (or empty)");
    group->shutdown(std::chrono::seconds(5));
  });
}

}  // namespace
}  // namespace distlab::testing
