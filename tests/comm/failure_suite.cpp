#include "tests/comm/failure_suite.hpp"

#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "runtime/comm/process_group.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "tests/comm/comm_test_util.hpp"
#include "tests/support/spawn.hpp"

namespace distlab::testing {

using comm::ProcessGroup;

void PrintTo(const FailureSuiteParam& param, std::ostream* out) { *out << param.backend; }

std::string failureSuiteParamName(const ::testing::TestParamInfo<FailureSuiteParam>& info) {
  return info.param.backend;
}

void FailureSuite::runRanks(int worldSize, const std::function<void(RankContext&)>& body,
                            const SpawnOptions& options) {
  if (worldSize > GetParam().maxWorldSize) {
    GTEST_SKIP() << "needs " << worldSize << " ranks; " << GetParam().backend << " runs at most "
                 << GetParam().maxWorldSize << " here";
  }
  spawn(SpawnMode::kProcesses, worldSize, body, options);
}

// The GPU suites link these tests without instantiating them (a dead rank's
// NCCL communicator is the nccl suite's own business).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FailureSuite);

namespace {

// A loaded CI machine may be slow to schedule the survivor that notices.
constexpr double kGraceSeconds = 5.0;

std::shared_ptr<ProcessGroup> makeGroup(RankContext& ctx, const std::string& backend,
                                        std::chrono::milliseconds timeout) {
  return makeTestGroup(ctx, backend, "failsuite", timeout);
}

void requireWithin(double seconds, double bound, const std::string& what) {
  if (seconds > bound) {
    throw std::runtime_error(what + " took " + std::to_string(seconds) + " s, more than " +
                             std::to_string(bound) + " s");
  }
}

// After a failure the group refuses new work, naming why (Backend's message).
void requireRefusal(ProcessGroup& g) {
  Tensor t = ones({2});
  expectThrows<DistError>([&] { g.allreduce(t)->wait(); }, {"refuses new work"});
}

TEST_P(FailureSuite, KilledPeerFailsEverySurvivorWithinTheTimeout) {
  const std::string backend = GetParam().backend;
  SpawnOptions options;
  options.mayDie = {1};
  runRanks(3, [&](RankContext& ctx) {
    constexpr auto kTimeout = std::chrono::seconds(10);
    auto g = makeGroup(ctx, backend, kTimeout);
    Tensor warm = ones({1 << 10});
    g->allreduce(warm)->wait();  // everyone connected
    if (ctx.rank == 1) {
      Tensor big = ones({1 << 20});
      g->allreduce(big);  // issued, then the process dies mid-collective
      ctx.killSelf();
    }
    Tensor big = ones({1 << 20});
    const double seconds = expectThrows<DistError>([&] { g->allreduce(big)->wait(); }, {});
    requireWithin(seconds, 10.0 + kGraceSeconds, "noticing the dead rank");
    requireRefusal(*g);
  }, options);
}

TEST_P(FailureSuite, CollectiveNobodyJoinsIsDistTimeoutErrorAfterItsTimeout) {
  const std::string backend = GetParam().backend;
  runRanks(2, [&](RankContext& ctx) {
    auto g = makeGroup(ctx, backend, std::chrono::milliseconds(500));
    g->barrier()->wait();
    if (ctx.rank == 1) {  // never joins; waits (bounded) until rank 0 reported
      ctx.store->wait({"reported"}, std::chrono::seconds(30));
      return;
    }
    Tensor t = ones({8});
    const double seconds =
        expectThrows<DistTimeoutError>([&] { g->allreduce(t)->wait(); }, {"ALLREDUCE"});
    if (seconds < 0.45) throw std::runtime_error("timed out early: " + std::to_string(seconds));
    requireWithin(seconds, 0.5 + kGraceSeconds, "the timeout");
    requireRefusal(*g);
    ctx.store->setString("reported", "1");
  });
}

TEST_P(FailureSuite, AbortFailsPendingWorkAtOnceAndRefusesMore) {
  const std::string backend = GetParam().backend;
  runRanks(2, [&](RankContext& ctx) {
    auto g = makeGroup(ctx, backend, std::chrono::seconds(30));
    g->barrier()->wait();
    if (ctx.rank == 1) {
      ctx.store->wait({"aborted"}, std::chrono::seconds(30));
      return;
    }
    Tensor t = ones({4});
    auto work = g->allreduce(t);  // rank 1 never joins
    Stopwatch watch;
    g->abort("failure suite abort");
    expectThrows<DistError>([&] { work->wait(); }, {});
    requireWithin(watch.elapsedSeconds(), 2.0 + kGraceSeconds, "failing the pending work");
    requireRefusal(*g);
    ctx.store->setString("aborted", "1");
  });
}

// Note [Work failure and the caller's tensors]: a collective failed from
// outside (Work::abort; the watchdog's timeout takes the same path) does not
// write the caller's tensor after its failure is published, even when the
// peer it waited for arrives afterwards.
TEST_P(FailureSuite, FailedCollectiveNeverWritesTheCallersTensorAfterwards) {
  const std::string backend = GetParam().backend;
  runRanks(2, [&](RankContext& ctx) {
    auto g = makeGroup(ctx, backend, std::chrono::seconds(10));
    g->barrier()->wait();
    Tensor t = full({1 << 16}, ctx.rank + 1.0);
    if (ctx.rank == 1) {
      ctx.store->wait({"failed"}, std::chrono::seconds(30));
      try {
        g->allreduce(t)->wait();  // late: its peer has given up
      } catch (const DistError&) {
      }
      ctx.store->setString("joined", "1");
      return;
    }
    auto work = g->allreduce(t);
    auto signal = std::make_shared<StartedSignal>();
    work->addObserver(signal);
    if (!signal->waitFor(std::chrono::seconds(20))) throw std::runtime_error("never started");
    work->abort("failure suite");
    expectThrows<DistError>([&] { work->wait(); }, {"failure suite"});
    const Tensor atFailure = t.clone();
    ctx.store->setString("failed", "1");
    ctx.store->wait({"joined"}, std::chrono::seconds(30));
    g->shutdown(std::chrono::seconds(5));  // whatever was in flight has drained
    // As bytes: what the interrupted algorithm left may be anything, NaN
    // included; what counts is that nothing changed after the failure.
    if (std::memcmp(t.rawData(), atFailure.rawData(), t.nbytes()) != 0) {
      throw std::runtime_error("the failed allreduce wrote the tensor after its failure");
    }
  });
}

TEST_P(FailureSuite, FailedReceiveNeverWritesTheCallersTensorAfterwards) {
  const std::string backend = GetParam().backend;
  runRanks(2, [&](RankContext& ctx) {
    auto g = makeGroup(ctx, backend, std::chrono::seconds(10));
    g->barrier()->wait();
    checkFailedReceiveLeavesTensorAlone(ctx, *g);
  });
}

// A point-to-point timeout is the operation's, not the group's.
TEST_P(FailureSuite, ReceiveTimeoutFailsOnlyThatOperation) {
  const std::string backend = GetParam().backend;
  runRanks(2, [&](RankContext& ctx) {
    auto g = makeGroup(ctx, backend, std::chrono::seconds(10));
    if (ctx.rank == 0) {
      Tensor t = empty({2});
      comm::RecvOptions ro;
      ro.tag = 4;
      ro.timeout = std::chrono::milliseconds(100);
      expectThrows<DistTimeoutError>([&] { g->recv(t, 1, ro); }, {"timed out"});
    }
    Tensor t = ones({2});
    g->allreduce(t)->wait();
    expectEqualTensor(t, full({2}, 2.0), "allreduce after a receive timeout");
    if (ctx.rank == 1) {
      g->send(full({2}, 5.0), 0, {.tag = 4});
    } else {
      Tensor r = empty({2});
      if (g->recv(r, 1, {.tag = 4}) != 1) throw std::runtime_error("the receive's source");
      expectEqualTensor(r, full({2}, 5.0), "a receive after the timed-out one");
    }
  });
}

}  // namespace
}  // namespace distlab::testing
