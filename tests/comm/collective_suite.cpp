#include "tests/comm/collective_suite.hpp"

#include <fmt/format.h>
#include <rapidcheck.h>

#include <cstring>

#include "runtime/core/errors.hpp"

#include "runtime/comm/object_collectives.hpp"
#include "runtime/comm/reduce_kernels.hpp"
#include "runtime/tensor/dispatch.hpp"
#include "tests/comm/collective_cases.hpp"
#include "tests/comm/comm_test_util.hpp"

namespace distlab::testing {

using comm::ProcessGroup;
using comm::ReduceOp;

std::string collectiveSuiteParamName(const ::testing::TestParamInfo<CollectiveSuiteParam>& info) {
  return info.param.backend + spawnModeName(info.param.mode) +
         (info.param.device.isCpu() ? "" : std::string(deviceTypeName(info.param.device.type)));
}

void PrintTo(const CollectiveSuiteParam& param, std::ostream* out) {
  *out << param.backend << "/" << spawnModeName(param.mode) << "/" << param.device.str();
}

void CollectiveSuite::SetUp() {
  if (!GetParam().unavailable) return;
  const std::string reason = GetParam().unavailable();
  if (!reason.empty()) GTEST_SKIP() << reason;
}

void CollectiveSuite::runRanks(int worldSize, const RankBody& body) {
  const CollectiveSuiteParam param = GetParam();
  if (worldSize > param.maxWorldSize) {
    GTEST_SKIP() << "needs " << worldSize << " ranks; " << param.backend << " runs at most "
                 << param.maxWorldSize << " here";
  }
  if (worldSize < param.minWorldSize) {
    GTEST_SKIP() << "this instantiation tests groups of " << param.minWorldSize
                 << " ranks or more";
  }
  SpawnOptions options;
  options.timeout = std::chrono::seconds(60);
  spawn(param.mode, worldSize,
        [&](RankContext& ctx) {
          comm::ProcessGroupConfig config;
          config.store = ctx.store;
          config.rank = ctx.rank;
          config.size = ctx.worldSize;
          config.name = "suite";
          config.timeout = std::chrono::seconds(20);
          config.backendSpec = param.backend;
          DefaultDeviceGuard onDevice(param.device);
          auto group = comm::createProcessGroup(config, param.options);
          body(*group, ctx);
          group->shutdown(std::chrono::seconds(5));
        },
        options);
}

namespace {

rc::Gen<OpCase> genCase(int n, const std::set<std::string>& notDrawn) {
  return rc::gen::exec([n, notDrawn] {
    OpCase c;
    std::vector<CaseKind> kinds;
    for (int k = 0; k < static_cast<int>(CaseKind::kCount); ++k) {
      if (!notDrawn.count(caseKindName(static_cast<CaseKind>(k))))
        kinds.push_back(static_cast<CaseKind>(k));
    }
    c.kind = *rc::gen::elementOf(kinds);
    c.dtype = *rc::gen::elementOf(allDtypes());
    std::vector<int> ops;
    for (auto k : allReduceOps()) {
      if (comm::isReduceOpSupported(ReduceOp(k), c.dtype) &&
          !notDrawn.count(std::string(comm::reduceOpName(ReduceOp(k))))) {
        ops.push_back(k);
      }
    }
    c.reduceOp = *rc::gen::elementOf(ops);
    c.root = *rc::gen::inRange(0, n);
    // Shapes: scalar, empty, odd 1-D sizes up to a few slots, small 2-D.
    const int form = *rc::gen::inRange(0, 4);
    if (form == 0) c.shape = {};
    if (form == 1) c.shape = {*rc::gen::inRange<int64_t>(0, 3000)};
    if (form == 2) c.shape = {*rc::gen::inRange<int64_t>(0, 9), *rc::gen::inRange<int64_t>(1, 40)};
    if (form == 3) c.shape = {*rc::gen::inRange<int64_t>(0, 4)};
    c.sizes = *rc::gen::container<std::vector<int64_t>>(n * n, rc::gen::inRange<int64_t>(0, 700));
    if (c.kind == CaseKind::kAlltoallSingle) {
      for (auto& s : c.sizes) s %= 9;  // rows; the row shape is c.shape
      if (shapeNumel(c.shape) > 64) c.shape = {3};
    }
    c.stacked = *rc::gen::arbitrary<bool>();
    if (!c.stacked && !c.shape.empty() && c.shape[0] == 0 && c.shape.size() > 1) c.stacked = true;
    c.seed = *rc::gen::inRange<uint64_t>(1, 1000000);
    return c;
  });
}

}  // namespace

// Property: random sequences of collectives over world sizes 1-8, every dtype,
// shapes including empty/scalar/odd, every op and root, uneven splits — results
// equal the sequential reference exactly, and the two identities hold.
TEST_P(CollectiveSuite, RandomCollectivesMatchReference) {
  const auto param = GetParam();
  const bool ok = rc::check("collectives match the sequential reference", [&] {
    const int n = *rc::gen::inRange(param.minWorldSize, param.maxWorldSize + 1);
    const auto cases = *rc::gen::container<std::vector<OpCase>>(
        *rc::gen::inRange(1, 5), genCase(n, param.notDrawn));
    try {
      runRanks(n, [&](ProcessGroup& g, RankContext&) {
        for (const auto& c : cases) runCase(g, c, param.unsupported);
        runIdentities(g, cases.front(), param.unsupported);
      });
    } catch (const SpawnError& e) {
      RC_FAIL(e.what());
    }
  });
  EXPECT_TRUE(ok);
}

// Worked examples from the PyTorch documentation (docs/pytorch-semantics.md,
// "Collective examples").
TEST_P(CollectiveSuite, DocumentedExamples) {
  runRanks(2, [](ProcessGroup& g, RankContext&) {
    const int r = g.rank();
    Tensor t = fromVector<int64_t>({1 + 2 * r, 2 + 2 * r});
    g.allreduce(t)->wait();
    expectEqualTensor(t, fromVector<int64_t>({4, 6}), "allreduce example");
    std::vector<Tensor> outs = {zeros({2}, {DType::kInt64}), zeros({2}, {DType::kInt64})};
    g.allgather(outs, fromVector<int64_t>({1 + 2 * r, 2 + 2 * r}))->wait();
    expectEqualTensor(outs[1], fromVector<int64_t>({3, 4}), "all_gather example");
    Tensor stacked = zeros({2, 2}, {DType::kInt64});
    g.allgatherIntoTensor(stacked, fromVector<int64_t>({1 + 2 * r, 2 + 2 * r}))->wait();
    expectEqualTensor(stacked, fromVector<int64_t>({1, 2, 3, 4}, {2, 2}), "stack form");
    Tensor rs = zeros({2}, {DType::kInt64});
    g.reduceScatterTensor(rs, arange(4))->wait();
    expectEqualTensor(rs, r == 0 ? fromVector<int64_t>({0, 2}) : fromVector<int64_t>({4, 6}),
                      "reduce_scatter_tensor example");
    // batch_isend_irecv ring: rank 0 gets [2, 3], rank 1 gets [0, 1].
    Tensor recvT = zeros({2}, {DType::kInt64});
    auto works = g.batchIsendIrecv({{comm::P2POp::kIsend, arange(2).add(Scalar(2 * r)), (r + 1) % 2},
                                    {comm::P2POp::kIrecv, recvT, (r + 1) % 2}});
    for (auto& w : works) w->wait();
    expectEqualTensor(recvT, r == 0 ? fromVector<int64_t>({2, 3}) : fromVector<int64_t>({0, 1}),
                      "batch_isend_irecv example");
  });
  if (!supports("all_to_all_single")) return;
  runRanks(4, [](ProcessGroup& g, RankContext&) {
    const int r = g.rank();
    const std::vector<std::vector<int64_t>> in = {
        {0, 1, 2, 3, 4, 5}, {10, 11, 12, 13, 14, 15, 16, 17, 18}, {20, 21, 22, 23, 24},
        {30, 31, 32, 33, 34, 35, 36}};
    const std::vector<std::vector<int64_t>> inSplits = {
        {2, 2, 1, 1}, {3, 2, 2, 2}, {2, 1, 1, 1}, {2, 2, 2, 1}};
    const std::vector<std::vector<int64_t>> outSplits = {
        {2, 3, 2, 2}, {2, 2, 1, 2}, {1, 2, 1, 2}, {1, 2, 1, 1}};
    const std::vector<std::vector<int64_t>> expected = {{0, 1, 10, 11, 12, 20, 21, 30, 31},
                                                        {2, 3, 13, 14, 22, 32, 33},
                                                        {4, 15, 16, 23, 34, 35},
                                                        {5, 17, 18, 24, 36}};
    Tensor out = empty({static_cast<int64_t>(expected[r].size())}, {DType::kInt64});
    g.alltoallSingle(out, fromVector<int64_t>(in[r]), outSplits[r], inSplits[r])->wait();
    expectEqualTensor(out, fromVector<int64_t>(expected[r]), "uneven all_to_all_single example");
    Tensor even = empty({4}, {DType::kInt64});
    g.alltoallSingle(even, arange(4).add(Scalar(4 * r)))->wait();
    expectEqualTensor(even, fromVector<int64_t>({r, 4 + r, 8 + r, 12 + r}), "even example");
  });
}

// Every ReduceOp on every dtype: exact where defined, an error naming op and
// dtype elsewhere (raised on every rank before any communication).
TEST_P(CollectiveSuite, ReduceOpsOnEveryDtype) {
  runRanks(3, [](ProcessGroup& g, RankContext&) {
    for (DType dtype : allDtypes()) {
      for (auto kind : allReduceOps()) {
        const ReduceOp op = kind == ReduceOp::kPremulSum
                                ? ReduceOp::premulSum(premulScalar(g.rank()))
                                : ReduceOp(kind);
        std::vector<Tensor> all;
        for (int r = 0; r < g.size(); ++r) {
          all.push_back(makeInput(dtype, {37}, 5, r, valueRange(ReduceOp(kind), dtype, r, 3)));
        }
        Tensor t = all[g.rank()].clone();
        const std::string what = fmt::format("allreduce {} on {}", comm::reduceOpName(op),
                                             dtypeName(dtype));
        if (!comm::isReduceOpSupported(op, dtype)) {
          try {
            g.allreduce(t, {.reduceOp = op});
          } catch (const ValueError& e) {
            const std::string msg = e.what();
            if (msg.find(std::string(comm::reduceOpName(op))) != std::string::npos &&
                msg.find(std::string(dtypeName(dtype))) != std::string::npos) {
              continue;
            }
            throw std::runtime_error(what + ": error does not name op and dtype: " + msg);
          }
          throw std::runtime_error(what + ": expected a ValueError");
        }
        g.allreduce(t, {.reduceOp = op})->wait();
        std::vector<double> s = {premulScalar(0), premulScalar(1), premulScalar(2)};
        expectEqualTensor(t, referenceReduce(all, ReduceOp(kind), s), what);
      }
    }
  });
}

// Tags, out-of-order matching, any source, send to self, messages larger than
// any internal buffer, and the blocking send-to-self error.
TEST_P(CollectiveSuite, PointToPoint) {
  runRanks(3, [](ProcessGroup& g, RankContext&) {
    const int r = g.rank();
    if (r == 0) {
      g.send(full({5}, 1.0), 1, {.tag = 3});
      g.send(full({5}, 2.0), 1, {.tag = 7});
      g.send(arange(0, 300000, 1), 2);  // 1.2 MB
      Tensor self = empty({4});
      auto rw = g.irecv(self, 0, {.tag = 9});
      g.isend(full({4}, 9.0), 0, {.tag = 9})->wait();
      rw->wait();
      expectEqualTensor(self, full({4}, 9.0), "send to self");
      bool threw = false;
      try {
        g.send(full({1}, 0.0), 0);
      } catch (const ValueError&) {
        threw = true;
      }
      if (!threw) throw std::runtime_error("blocking send to self must be a ValueError");
    } else if (r == 1) {
      Tensor b = empty({5}), a = empty({5});
      g.recv(b, 0, {.tag = 7});  // posted first, matches the second message
      g.recv(a, 0, {.tag = 3});
      expectEqualTensor(a, full({5}, 1.0), "tag 3");
      expectEqualTensor(b, full({5}, 2.0), "tag 7");
      g.send(full({2}, 5.0), 2, {.tag = 1});
    } else {
      Tensor big = empty({300000});
      g.recv(big, 0);
      expectEqualTensor(big, arange(0, 300000, 1), "large message");
      Tensor any = empty({2});
      const int src = g.recvAnysource(any, {.tag = 1});
      if (src != 1) throw std::runtime_error(fmt::format("any-source recv got src {}", src));
      expectEqualTensor(any, full({2}, 5.0), "any source");
    }
    g.barrier()->wait();
  });
}

// A stream of messages on two tags, some large enough to queue behind a full
// channel, sent without waiting and received tag 1 first in each block of ten:
// per (source, tag) order holds whichever path a message takes (written by
// the sender at once or queued, read by the receiver at once, matched by an
// earlier receive or kept as unexpected).
TEST_P(CollectiveSuite, PointToPointStreamKeepsOrderPerTag) {
  constexpr int kMessages = 200;
  auto numel = [](int i) -> int64_t { return i % 17 == 0 ? 4096 : 1 + (i * 7) % 64; };
  runRanks(2, [&](ProcessGroup& g, RankContext&) {
    if (g.rank() == 0) {
      std::vector<comm::WorkPtr> sent;
      for (int i = 0; i < kMessages; ++i) {
        sent.push_back(g.isend(full({numel(i)}, static_cast<double>(i)), 1, {.tag = i % 2}));
      }
      for (auto& w : sent) w->wait();
    } else {
      for (int block = 0; block < kMessages; block += 10) {
        for (int tag : {1, 0}) {
          for (int i = block + tag; i < block + 10; i += 2) {
            Tensor t = empty({numel(i)});
            g.recv(t, 0, {.tag = tag});
            expectEqualTensor(t, full({numel(i)}, static_cast<double>(i)),
                              fmt::format("message {} (tag {})", i, tag));
          }
        }
      }
    }
    g.barrier()->wait();
  });
}

// Async issue returns at once; works complete in order; futures chain then().
TEST_P(CollectiveSuite, AsyncWorkAndFutures) {
  runRanks(2, [](ProcessGroup& g, RankContext&) {
    std::vector<Tensor> ts;
    std::vector<comm::WorkPtr> works;
    for (int i = 0; i < 8; ++i) {
      ts.push_back(full({1000}, static_cast<double>(i + g.rank())));
      works.push_back(g.allreduce(ts.back()));
    }
    auto fut = works.back()->getFuture()->then([](comm::Future& f) {
      auto v = f.value();
      return std::vector<Tensor>{v[0].div(Scalar(2.0))};  // a new tensor: ts[7] stays
    });
    for (int i = 0; i < 8; ++i) {
      works[i]->wait();
      if (!works[i]->isCompleted() || !works[i]->isSuccess()) {
        throw std::runtime_error("work not completed after wait");
      }
      expectEqualTensor(ts[i], full({1000}, static_cast<double>(2 * i + 1)), "async allreduce");
      if (works[i]->info().seq != static_cast<uint64_t>(i + 1)) {
        throw std::runtime_error("sequence numbers must count from 1");
      }
    }
    expectEqualTensor(fut->value()[0], full({1000}, 15.0 / 2), "future then");
    expectEqualTensor(works[0]->result()[0], full({1000}, 1.0), "work result");
  });
}

// The checks of WorkDescribesItsOperation for its three Works, numbered from
// `firstSeq`.
static void expectWorksDescribe(ProcessGroup& g, const comm::WorkPtr (&works)[3], int firstSeq) {
  const comm::OpType types[] = {comm::OpType::kAllreduce, comm::OpType::kBroadcast,
                                comm::OpType::kReduce};
  const int peers[] = {-1, 1, 0};
  const std::string redops[] = {"MAX", "", "SUM"};
  for (int i = 0; i < 3; ++i) {
    const comm::Work& w = *works[i];
    const comm::WorkInfo& info = w.info();
    SCOPED_TRACE(info.describe());
    EXPECT_TRUE(w.isCompleted() && w.isSuccess());
    EXPECT_EQ(w.state(), comm::WorkState::kCompleted);
    EXPECT_EQ(info.groupName, g.name());
    EXPECT_EQ(info.rank, g.rank());
    EXPECT_EQ(info.opType, types[i]);
    EXPECT_EQ(info.seq, static_cast<uint64_t>(firstSeq + i));
    EXPECT_EQ(info.peer, peers[i]);
    EXPECT_EQ(info.reduceOp, redops[i]);
    EXPECT_EQ(info.numelIn, 12);
    EXPECT_EQ(info.numelOut, 12);
    ASSERT_EQ(info.inputs.size(), 1u);
    ASSERT_EQ(info.outputs.size(), 1u);
    EXPECT_EQ(info.inputs.shapes(), std::vector<Shape>{Shape({3, 4})});
    EXPECT_EQ(info.outputs.dtype(0), DType::kFloat32);
    EXPECT_GT(w.scheduledNs(), 0);
    EXPECT_LE(w.scheduledNs(), w.startedNs());
    EXPECT_LE(w.startedNs(), w.completedNs());
  }
}

// A Work says what ran and when, whether the backend ran it inline (the shm
// backend then builds the Work after arriving at the operation's first step:
// Note [Bookkeeping while the stamps travel]) or queued it, and whether its
// tensor metadata was built with it or on demand (Note [Tensor metadata on
// demand]).
TEST_P(CollectiveSuite, WorkDescribesItsOperation) {
  runRanks(2, [](ProcessGroup& g, RankContext&) {
    Tensor t = full({3, 4}, 1.0);  // float32, as expectWorksDescribe checks
    for (const bool asyncOp : {false, true}) {
      SCOPED_TRACE(asyncOp ? "asynchronous" : "blocking");
      comm::AllreduceOptions allreduce;
      allreduce.asyncOp = asyncOp;
      allreduce.reduceOp = ReduceOp::kMax;
      comm::BroadcastOptions broadcast;
      broadcast.asyncOp = asyncOp;
      broadcast.rootRank = 1;
      comm::ReduceOptions reduce;
      reduce.asyncOp = asyncOp;
      reduce.rootRank = 0;
      const comm::WorkPtr works[] = {g.allreduce(t, allreduce), g.broadcast(t, broadcast),
                                     g.reduce(t, reduce)};
      for (const auto& w : works) w->wait();
      expectWorksDescribe(g, works, asyncOp ? 4 : 1);
    }
  });
}

TEST_P(CollectiveSuite, ObjectCollectives) {
  runRanks(3, [](ProcessGroup& g, RankContext&) {
    const int r = g.rank();
    auto bytes = [](const std::string& s) { return comm::Bytes(s.begin(), s.end()); };
    comm::Bytes obj = r == 1 ? bytes("foo-12-{1: 2}") : bytes("x");
    comm::broadcastObject(g, obj, 1);
    EXPECT_EQ(obj, bytes("foo-12-{1: 2}")) << "broadcastObject on rank " << r;
    auto all = comm::allGatherObject(g, bytes(std::string(r + 1, 'a' + r)));
    ASSERT_EQ(all.size(), 3u);
    for (int q = 0; q < 3; ++q) {
      EXPECT_EQ(all[q], bytes(std::string(q + 1, 'a' + q))) << "allGatherObject entry " << q;
    }
    auto gathered = comm::gatherObject(g, bytes(std::to_string(r * 100)), 2);
    if (r == 2) {
      ASSERT_EQ(gathered.size(), 3u);
      for (int q = 0; q < 3; ++q) EXPECT_EQ(gathered[q], bytes(std::to_string(q * 100)));
    } else {
      EXPECT_TRUE(gathered.empty()) << "gatherObject returned entries on a non-dst rank";
    }
    std::vector<comm::Bytes> inputs;
    if (r == 0) inputs = {bytes(""), bytes("one"), bytes("{1: 2}")};
    auto mine = comm::scatterObject(g, inputs, 0);
    const std::vector<comm::Bytes> want = {bytes(""), bytes("one"), bytes("{1: 2}")};
    EXPECT_EQ(mine, want[r]) << "scatterObject on rank " << r;
  });
}

}  // namespace distlab::testing
