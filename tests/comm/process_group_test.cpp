// ProcessGroup front door, registry, decorators, Work/Future, group management
// (initProcessGroup, newGroup, subgroups, split, rank translation) and DeviceMesh.
#include <gtest/gtest.h>

#include <atomic>

#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/device_mesh.hpp"
#include "runtime/comm/forwarding_backend.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/comm/reduce_kernels.hpp"
#include "runtime/comm/store/hash_store.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/errors.hpp"
#include "tests/comm/comm_test_util.hpp"
#include "tests/support/spawn.hpp"

namespace distlab::testing {
namespace {

using namespace distlab::comm;

TEST(Future, ThenChainsValuesAndErrors) {
  auto f = std::make_shared<Future>();
  auto g = f->then([](Future& p) { return std::vector<Tensor>{p.value()[0].add(Scalar(1.0))}; });
  EXPECT_FALSE(g->isCompleted());
  f->markCompleted({full({2}, 1.0)});
  EXPECT_TRUE(g->value()[0].equal(full({2}, 2.0)));
  auto failed = Future::failed(std::make_exception_ptr(DistBackendError("boom")));
  auto chained = failed->then([](Future& p) { return p.value(); });
  EXPECT_THROW(chained->value(), DistBackendError);
  EXPECT_THROW(std::make_shared<Future>()->wait(std::chrono::milliseconds(1)), DistTimeoutError);
  EXPECT_THROW(f->markCompleted({}), Error);
  EXPECT_TRUE(Future::completed({ones({1})})->isCompleted());
}

struct RecordingObserver : WorkObserver {
  std::vector<std::string> events;
  void onScheduled(const Work&) override { events.push_back("scheduled"); }
  void onStarted(const Work&) override { events.push_back("started"); }
  void onCompleted(const Work&) override { events.push_back("completed"); }
};

TEST(Work, ObserversSeeTransitionsAndLateObserversReplay) {
  WorkInfo info;
  info.opType = OpType::kAllreduce;
  info.seq = 3;
  info.groupName = "g";
  auto work = std::make_shared<Work>(info, std::vector<Tensor>{ones({1})});
  auto early = std::make_shared<RecordingObserver>();
  work->addObserver(early);
  EXPECT_FALSE(work->isCompleted());
  EXPECT_THROW(work->wait(std::chrono::milliseconds(1)), DistTimeoutError);
  comm::WorkCompletion::markStarted(*work);
  comm::WorkCompletion::finish(*work);
  auto late = std::make_shared<RecordingObserver>();
  work->addObserver(late);
  const std::vector<std::string> all = {"scheduled", "started", "completed"};
  EXPECT_EQ(early->events, all);
  EXPECT_EQ(late->events, all);
  EXPECT_TRUE(work->wait());
  EXPECT_GT(work->completedNs(), 0);
  EXPECT_GE(work->completedNs(), work->startedNs());
  EXPECT_NE(info.describe().find("ALLREDUCE(seq 3"), std::string::npos);
}

class EmptyBackend : public Backend {
 public:
  EmptyBackend() : Backend(0, 1) {}
  std::string name() const override { return "empty"; }
};

TEST(Backend, UnsupportedOperationsNameBackendAndOperation) {
  EmptyBackend b;
  try {
    b.allreduce(ones({1}), {});
    FAIL() << "expected an error";
  } catch (const DistBackendError& e) {
    EXPECT_STREQ(e.what(), "Backend empty does not support allreduce");
  }
  EXPECT_THROW(b.reduceScatterTensor(ones({1}), ones({1}), {}), DistBackendError);
}

TEST(Registry, LooksUpByNameAndParsesSpecs) {
  EXPECT_TRUE(isBackendRegistered("SHM"));
  EXPECT_EQ(lookupBackend("Shm").name, "shm");
  try {
    lookupBackend("nope");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("shm"), std::string::npos);
  }
  auto routes = parseBackendSpec("cpu:shm");
  ASSERT_EQ(routes.size(), 1u);
  EXPECT_EQ(routes[0], std::make_pair(std::string("cpu"), std::string("shm")));
  EXPECT_THROW(parseBackendSpec("cpu:shm,gpu:shm"), ValueError);
  EXPECT_THROW(parseBackendSpec("cpu:"), ValueError);
  EXPECT_THROW(registerBackend({"shm", [](const BackendContext&) { return BackendPtr(); }}),
               ValueError);
}

// A decorator installed through the registry wraps every new group's backend.
class CountingBackend : public ForwardingBackend {
 public:
  CountingBackend(BackendPtr inner, std::atomic<int>* count)
      : ForwardingBackend(std::move(inner)), count_(count) {}
  uint64_t lastSeq = 0;

 protected:
  WorkPtr intercept(const Operation& op) override {
    if (op.type == OpType::kAllreduce) {
      count_->fetch_add(1);
      lastSeq = op.seq;
    }
    return forward(op);
  }

 private:
  std::atomic<int>* count_;
};

ProcessGroupPtr makeGroup(RankContext& ctx, const std::string& name) {
  ProcessGroupConfig config;
  config.store = ctx.store;
  config.rank = ctx.rank;
  config.size = ctx.worldSize;
  config.name = name;
  config.timeout = std::chrono::seconds(10);
  config.backendSpec = "shm";
  return createProcessGroup(config);
}

TEST(ProcessGroupTest, DecoratorsSequenceNumbersAndValidation) {
  std::atomic<int> count{0};
  addBackendDecorator("count", kLayerRecorder, [&](BackendPtr inner, const BackendContext&) {
    return std::make_shared<CountingBackend>(inner, &count);
  });
  spawn(SpawnMode::kThreads, 2, [&](RankContext& ctx) {
    auto g = makeGroup(ctx, "decorated");
    auto backend = std::dynamic_pointer_cast<CountingBackend>(g->getBackend(DeviceType::kCPU));
    ASSERT_NE(backend, nullptr);
    EXPECT_EQ(g->backendName(), "shm");
    Tensor t = ones({4});
    g->allreduce(t)->wait();
    g->barrier()->wait();
    g->allreduce(t)->wait();
    EXPECT_EQ(backend->lastSeq, 3u);
    EXPECT_EQ(g->sequenceNumber(), 3u);
    const int peer = 1 - ctx.rank;
    auto s = g->isend(ones({1}), peer);
    Tensor r = empty({1});
    g->irecv(r, peer)->wait();
    s->wait();
    EXPECT_EQ(g->sendCount(peer), 1u);
    EXPECT_EQ(g->recvCount(peer), 1u);
    EXPECT_THROW(g->broadcast(t, {.rootRank = 2}), ValueError);
    EXPECT_THROW(g->allreduce(ones({2, 2}).t()), ValueError);  // non-contiguous
    EXPECT_THROW(g->allgather({ones({4})}, t), ValueError);    // wrong list size
    EXPECT_THROW(g->alltoallSingle(empty({3}), ones({3})), ValueError);  // 3 rows / 2 ranks
    EXPECT_THROW(g->allreduce(ones({2}), {.reduceOp = ReduceOp::kBand}), ValueError);
    EXPECT_EQ(g->sequenceNumber(), 3u);  // rejected calls take no number
    EXPECT_EQ(g->resolveGroupRank(std::nullopt, 1, "src"), 1);
    EXPECT_THROW(g->resolveGroupRank(1, 1, "src"), ValueError);
    EXPECT_THROW(g->resolveGroupRank(std::nullopt, std::nullopt, "src"), ValueError);
  });
  EXPECT_EQ(count.load(), 4);
  EXPECT_TRUE(removeBackendDecorator("count"));
}

// Note [Backends without a lock]: a backend set after creation takes the next
// operations; the one it replaced stays alive and usable for the group's life.
TEST(ProcessGroupTest, ReplacedBackendTakesNextOperations) {
  std::atomic<int> count{0};
  spawn(SpawnMode::kThreads, 2, [&](RankContext& ctx) {
    auto g = makeGroup(ctx, "replaced");
    BackendPtr original = g->getBackend(DeviceType::kCPU);
    g->setBackend(DeviceType::kCPU, std::make_shared<CountingBackend>(original, &count));
    EXPECT_NE(std::dynamic_pointer_cast<CountingBackend>(g->getBackend(DeviceType::kCPU)),
              nullptr);
    Tensor t = ones({1});
    g->allreduce(t)->wait();
    EXPECT_EQ(t.item<float>(), 2.0f);
    original.reset();  // the group still holds it through the wrapper
    g->allreduce(t)->wait();
    EXPECT_EQ(t.item<float>(), 4.0f);
    EXPECT_FALSE(g->hasBackend(DeviceType::kMeta));  // meta tensors have no data to move
    EXPECT_THROW(g->getBackend(DeviceType::kMeta), DistBackendError);
  });
  EXPECT_EQ(count.load(), 4);  // two allreduces on each of two ranks
}

TEST(GroupManagement, InitNewGroupSubgroupsAndRankTranslation) {
  spawn(SpawnMode::kThreads, 4, [](RankContext& ctx) {
    ThreadWorldScope scope;
    EXPECT_FALSE(isInitialized());
    EXPECT_THROW(defaultGroup(), Error);
    InitOptions init;
    init.backend = "shm";
    init.store = ctx.store;
    init.rank = ctx.rank;
    init.worldSize = ctx.worldSize;
    init.timeout = std::chrono::seconds(10);
    EXPECT_THROW(initProcessGroup(InitOptions{.backend = "shm", .store = ctx.store}), ValueError);
    auto world = initProcessGroup(init);
    EXPECT_THROW(initProcessGroup(init), ValueError);
    EXPECT_EQ(getRank(), ctx.rank);
    EXPECT_EQ(getWorldSize(), 4);
    EXPECT_EQ(getBackend(), "shm");
    auto odd = newGroup({.ranks = {3, 1}});
    if (ctx.rank % 2 == 1) {
      EXPECT_EQ(getRank(odd), ctx.rank / 2);
      EXPECT_EQ(getWorldSize(odd), 2);
      Tensor t = full({1}, static_cast<double>(ctx.rank));
      odd->allreduce(t)->wait();
      EXPECT_TRUE(t.equal(full({1}, 4.0)));
      EXPECT_EQ(getGlobalRank(odd, 1), 3);
      EXPECT_EQ(getGroupRank(odd, 3), 1);
    } else {
      EXPECT_FALSE(odd->isMember());
      EXPECT_EQ(getRank(odd), -1);
      EXPECT_EQ(getWorldSize(odd), -1);
      EXPECT_THROW(odd->allreduce(ones({1})), ValueError);
    }
    EXPECT_THROW(getGroupRank(odd, 0), Error);
    EXPECT_EQ(getProcessGroupRanks(odd), (std::vector<int>{1, 3}));
    auto [mine, all] = newSubgroups(2);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(mine->globalRanks(), (std::vector<int>{ctx.rank / 2 * 2, ctx.rank / 2 * 2 + 1}));
    EXPECT_THROW(newSubgroups(3), ValueError);
    if (ctx.rank < 2) {  // only members call with local synchronization
      auto local = newGroup({.ranks = {0, 1}, .useLocalSynchronization = true});
      EXPECT_EQ(local->rank(), ctx.rank);
    }
    auto child = world->split({0, 2});
    EXPECT_EQ(child->isMember(), ctx.rank % 2 == 0);
    if (child->isMember()) {
      Tensor t = full({1}, 1.0);
      child->allreduce(t)->wait();
      EXPECT_TRUE(t.equal(full({1}, 2.0)));
    }
    destroyProcessGroup();
    EXPECT_FALSE(isInitialized());
  });
}

TEST(DeviceMeshTest, TwoByTwoMeshGroupsRanksAndCoordinates) {
  spawn(SpawnMode::kThreads, 4, [](RankContext& ctx) {
    ThreadWorldScope scope;
    initProcessGroup({.backend = "shm", .store = ctx.store, .worldSize = 4, .rank = ctx.rank,
                      .timeout = std::chrono::seconds(10)});
    EXPECT_THROW(initDeviceMesh("cuda:0", {2, 2}), ValueError);
    EXPECT_THROW(initDeviceMesh("cpu", {2, 2}, {"dp", "dp"}), ValueError);
    DeviceMesh mesh = initDeviceMesh("cpu", {2, 2}, {"dp", "tp"});
    const int r = ctx.rank;
    EXPECT_EQ(mesh.getLocalRank("dp"), r / 2);
    EXPECT_EQ(mesh.getLocalRank(1), r % 2);
    EXPECT_EQ(mesh.getCoordinate(), (std::vector<int64_t>{r / 2, r % 2}));
    // dim 0 reduces across columns (0,2),(1,3); dim 1 across rows (0,1),(2,3).
    EXPECT_EQ(mesh.getGroup("dp")->globalRanks(), (std::vector<int>{r % 2, r % 2 + 2}));
    EXPECT_EQ(mesh.getGroup("tp")->globalRanks(), (std::vector<int>{r / 2 * 2, r / 2 * 2 + 1}));
    EXPECT_THROW(mesh.getGroup(), ValueError);
    EXPECT_THROW(mesh.dimIndex("pp"), ValueError);
    Tensor t = full({1}, static_cast<double>(r));
    mesh.getGroup("tp")->allreduce(t)->wait();
    EXPECT_TRUE(t.equal(full({1}, static_cast<double>(r / 2 * 4 + 1))));
    DeviceMesh flat = DeviceMesh::fromGroups({defaultGroup()}, "cpu");
    EXPECT_EQ(flat.shape(), (std::vector<int64_t>{4}));
    EXPECT_EQ(flat.getLocalRank(), r);
    destroyProcessGroup();
  });
}

TEST(ReduceKernels, BoolHalfAndPremul) {
  const bool a[] = {true, false, true}, b[] = {true, false, false};
  bool out[3];
  const void* srcs[] = {a, b};
  reduceN(out, srcs, 2, 3, DType::kBool, ReduceOp::kSum);
  EXPECT_EQ(std::vector<bool>(out, out + 3), (std::vector<bool>{true, false, true}));
  reduceN(out, srcs, 2, 3, DType::kBool, ReduceOp::kBxor);
  EXPECT_EQ(std::vector<bool>(out, out + 3), (std::vector<bool>{false, false, true}));
  Half h[2] = {Half(3.0f), Half(5.0f)};
  Half hout;
  const void* hs[] = {&h[0], &h[1]};
  reduceN(&hout, hs, 2, 1, DType::kFloat16, ReduceOp::kAvg);
  EXPECT_EQ(static_cast<float>(hout), 4.0f);
  float f = 3.0f, g;
  premulCopy(&g, &f, 1, DType::kFloat32, 0.5);
  EXPECT_EQ(g, 1.5f);
  EXPECT_THROW(checkReduceOpSupported(ReduceOp::kAvg, DType::kInt32, "x"), ValueError);
  EXPECT_EQ(parseReduceOp("PROD").kind, ReduceOp::kProduct);
  EXPECT_THROW(parseReduceOp("mean"), ValueError);
}

// The one-pass fast path (two float sources, SUM) and the generic path agree
// with reduceN bit for bit, also when `out` aliases a source (the shm
// all-reduce reduces its own part in place).
TEST(ReduceKernels, ReduceNAndCopyEqualsReduceNThenCopy) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32}) {
    for (ReduceOp op : {ReduceOp(ReduceOp::kSum), ReduceOp(ReduceOp::kMax)}) {
      for (int n : {2, 3}) {
        const size_t count = 37;
        std::vector<Tensor> in;
        for (int r = 0; r < n; ++r) {
          in.push_back(arange(static_cast<double>(r), r + 0.3 * count, 0.3, TensorOptions{dtype})
                           .slice(0, 0, static_cast<int64_t>(count))
                           .contiguous());
        }
        std::vector<const void*> srcs;
        for (auto& t : in) srcs.push_back(t.rawData());
        Tensor expected = empty({static_cast<int64_t>(count)}, TensorOptions{dtype});
        reduceN(expected.rawData(), srcs.data(), n, count, dtype, op);
        Tensor out = in[0].clone();
        srcs[0] = out.rawData();  // out aliases source 0
        Tensor copy = empty({static_cast<int64_t>(count)}, TensorOptions{dtype});
        reduceNAndCopy(out.rawData(), copy.rawData(), srcs.data(), n, count, dtype, op);
        EXPECT_TRUE(out.equal(expected)) << dtypeName(dtype) << " n=" << n;
        EXPECT_TRUE(copy.equal(expected)) << dtypeName(dtype) << " n=" << n;
      }
    }
  }
}

}  // namespace
}  // namespace distlab::testing
