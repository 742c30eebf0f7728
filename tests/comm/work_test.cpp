// Work lifecycle contracts (work.hpp): Note [Work completion order] (observers
// have seen a Work finish before any wait() on it returns) and Note [Work
// failure and the caller's tensors] (a failure arriving while the backend runs
// the operation is published only after the backend let go).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "runtime/comm/future.hpp"
#include "runtime/comm/progress_thread.hpp"
#include "runtime/comm/work.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"
#include "tests/comm/comm_test_util.hpp"

namespace distlab::testing {
namespace {

using namespace distlab::comm;

WorkInfo allreduceInfo() {
  WorkInfo info;
  info.groupName = "work_test";
  info.opType = OpType::kAllreduce;
  info.seq = 1;
  info.timeout = std::chrono::seconds(5);
  return info;
}

std::shared_ptr<Work> makeWork() {
  return std::make_shared<Work>(allreduceInfo(), std::vector<Tensor>{});
}

// Holds the completing thread inside onCompleted for up to kHold: a waiter
// that returns meanwhile was woken before the observers ran. (The hold is an
// observation window for something that must never happen; the passing run
// spends it in full, a failing one ends it early.)
class HoldingObserver : public WorkObserver {
 public:
  static constexpr Milliseconds kHold{200};
  explicit HoldingObserver(const std::atomic<bool>& waitReturned) : waitReturned_(waitReturned) {}
  void onCompleted(const Work& work) override {
    stateSeen = work.state();
    const Deadline hold = Deadline::after(kHold);
    while (!hold.expired()) {
      if (waitReturned_.load()) {
        waiterReturnedDuringObserver = true;
        break;
      }
      std::this_thread::yield();
    }
    finished = true;
  }
  std::atomic<WorkState> stateSeen{WorkState::kScheduled};
  std::atomic<bool> waiterReturnedDuringObserver{false};
  std::atomic<bool> finished{false};

 private:
  const std::atomic<bool>& waitReturned_;
};

TEST(WorkTest, ObserversSeeCompletionBeforeWaitReturns) {
  for (bool failing : {false, true}) {
    auto work = makeWork();
    std::atomic<bool> waitReturned{false};
    auto observer = std::make_shared<HoldingObserver>(waitReturned);
    work->addObserver(observer);
    std::atomic<bool> waiting{false};
    bool observerDoneAtReturn = false;
    std::thread waiter([&] {
      waiting = true;
      try {
        work->wait(std::chrono::seconds(10));
      } catch (const DistBackendError&) {
      }
      observerDoneAtReturn = observer->finished.load();
      waitReturned = true;
    });
    const Deadline deadline = Deadline::after(std::chrono::seconds(10));
    while (!waiting && !deadline.expired()) std::this_thread::yield();
    comm::WorkCompletion::finish(*work, failing ? std::make_exception_ptr(DistBackendError("boom")) : nullptr);
    waiter.join();
    EXPECT_FALSE(observer->waiterReturnedDuringObserver) << "failing=" << failing;
    EXPECT_TRUE(observerDoneAtReturn) << "failing=" << failing;
    EXPECT_EQ(observer->stateSeen.load(), failing ? WorkState::kFailed : WorkState::kCompleted);
  }
}

TEST(WorkTest, FailureDuringExecutionIsPublishedAfterTheBackendLetGo) {
  auto work = makeWork();
  std::exception_ptr cancelledWith;
  int cancels = 0;
  ASSERT_TRUE(comm::WorkCompletion::beginExecution(*work, [&](std::exception_ptr why) {
    cancelledWith = why;
    ++cancels;
  }));
  EXPECT_EQ(work->state(), WorkState::kStarted);
  work->abort("the watchdog gave up");
  comm::WorkCompletion::finish(*work, std::make_exception_ptr(DistTimeoutError("a second failure")));
  EXPECT_EQ(cancels, 1);
  ASSERT_TRUE(cancelledWith);
  // Not published while the backend may still touch the tensors.
  EXPECT_FALSE(work->isCompleted());
  EXPECT_THROW(work->wait(std::chrono::milliseconds(20)), DistTimeoutError);
  // The backend lets go (its own result: success); the first failure wins.
  comm::WorkCompletion::endExecution(*work, nullptr);
  EXPECT_TRUE(work->isCompleted());
  EXPECT_FALSE(work->isSuccess());
  expectThrows<DistBackendError>([&] { work->wait(std::chrono::seconds(1)); },
                                 {"aborted", "the watchdog gave up"});
  EXPECT_TRUE(work->getFuture()->hasError());
}

// Note [Per-operation cost]: a Work made with one output tensor keeps it
// outside a vector; callers see the same list as from the vector form, and the
// start time the backend passes is the one recorded.
TEST(WorkTest, OneOutputWorkGivesItAsItsResult) {
  Tensor output = ones({3});
  auto work = std::make_shared<Work>(allreduceInfo(), output);
  auto early = work->getFuture();  // taken before completion
  EXPECT_TRUE(work->result().empty());
  const int64_t startedNs = monotonicNowNs();
  ASSERT_TRUE(comm::WorkCompletion::beginExecution(*work, [](std::exception_ptr) {}, startedNs));
  EXPECT_EQ(work->startedNs(), startedNs);
  comm::WorkCompletion::endExecution(*work, nullptr);
  ASSERT_EQ(work->result().size(), 1u);
  EXPECT_EQ(work->result()[0].rawData(), output.rawData());
  ASSERT_EQ(early->value().size(), 1u);
  EXPECT_EQ(early->value()[0].rawData(), output.rawData());
  ASSERT_EQ(work->getFuture()->value().size(), 1u);
  EXPECT_GE(work->completedNs(), startedNs);
}

// Note [Tensor metadata on demand]: a Work made with kMetaFromOutput describes
// its one tensor as input and output, the same to every thread that asks
// first at once; an undefined tensor leaves the lists empty, as makeWorkInfo.
TEST(WorkTest, TensorMetadataOnDemandIsTheSameOnEveryThread) {
  const Tensor output = ones({2, 3});
  auto work = std::make_shared<Work>(kMetaFromOutput, allreduceInfo, output);
  std::atomic<int> described{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      const WorkInfo& info = work->info();
      const bool same = info.numelIn == 6 && info.numelOut == 6 && info.inputs.size() == 1 &&
                        info.outputs.size() == 1 &&
                        info.inputs.shapes() == std::vector<Shape>{Shape({2, 3})} &&
                        info.outputs.shapes() == info.inputs.shapes() &&
                        info.outputs.dtype(0) == output.dtype() && info.groupName == "work_test";
      if (same) described.fetch_add(1);
    });
  }
  for (auto& t : readers) t.join();
  EXPECT_EQ(described.load(), 4);
  EXPECT_NE(work->info().describe().find("6 elements in"), std::string::npos)
      << work->info().describe();

  auto none = std::make_shared<Work>(kMetaFromOutput, allreduceInfo, Tensor());
  EXPECT_TRUE(none->info().inputs.empty());
  EXPECT_TRUE(none->info().outputs.empty());
  EXPECT_EQ(none->info().numelIn, 0);
}

// Records the transitions it is told of, in order.
class StateRecorder : public WorkObserver {
 public:
  void onScheduled(const Work&) override { seen.push_back(WorkState::kScheduled); }
  void onStarted(const Work&) override { seen.push_back(WorkState::kStarted); }
  void onCompleted(const Work& work) override { seen.push_back(work.state()); }
  std::vector<WorkState> seen;
};

// Note [Unshared execution]: a Work run before anyone else holds it ends as
// a locked bracket would leave it; observers added afterwards replay every
// transition, and a Work made kScheduledAtStart was scheduled when it started.
TEST(WorkTest, UnsharedExecutionEndsAsTheBracketWould) {
  Tensor output = ones({2});
  auto work = std::make_shared<Work>(allreduceInfo(), output, kScheduledAtStart);
  EXPECT_EQ(work->scheduledNs(), 0);  // not reached until it starts
  const int64_t startedNs = monotonicNowNs();
  comm::WorkCompletion::startUnshared(*work, startedNs);
  comm::WorkCompletion::finishUnshared(*work, nullptr);
  EXPECT_EQ(work->scheduledNs(), startedNs);
  EXPECT_EQ(work->startedNs(), startedNs);
  EXPECT_GE(work->completedNs(), startedNs);
  EXPECT_TRUE(work->wait(std::chrono::seconds(1)));
  ASSERT_EQ(work->result().size(), 1u);
  EXPECT_EQ(work->result()[0].rawData(), output.rawData());
  EXPECT_EQ(work->getFuture()->value().size(), 1u);
  auto observer = std::make_shared<StateRecorder>();
  work->addObserver(observer);
  EXPECT_EQ(observer->seen, (std::vector<WorkState>{WorkState::kScheduled, WorkState::kStarted,
                                                    WorkState::kCompleted}));
}

TEST(WorkTest, UnsharedFailureIsWhatWaitThrows) {
  auto work = makeWork();
  comm::WorkCompletion::startUnshared(*work, monotonicNowNs());
  comm::WorkCompletion::finishUnshared(*work, std::make_exception_ptr(DistBackendError("peer gone")));
  EXPECT_EQ(work->state(), WorkState::kFailed);
  expectThrows<DistBackendError>([&] { work->wait(std::chrono::seconds(1)); }, {"peer gone"});
  EXPECT_TRUE(work->getFuture()->hasError());
}

// A Work that is already observed or awaited needs its transitions told:
// it must take the locked bracket.
TEST(WorkTest, UnsharedExecutionRefusesAnObservedOrAwaitedWork) {
  auto observed = makeWork();
  observed->addObserver(std::make_shared<StateRecorder>());
  EXPECT_THROW(comm::WorkCompletion::startUnshared(*observed, monotonicNowNs()), Error);
  EXPECT_EQ(observed->state(), WorkState::kScheduled);
  auto awaited = makeWork();
  awaited->getFuture();
  EXPECT_THROW(comm::WorkCompletion::startUnshared(*awaited, monotonicNowNs()), Error);
  EXPECT_EQ(awaited->state(), WorkState::kScheduled);
}

TEST(WorkTest, WorkFailedWhileQueuedIsNeverStarted) {
  auto work = makeWork();
  work->abort("dropped while queued");
  bool cancelled = false;
  EXPECT_FALSE(comm::WorkCompletion::beginExecution(*work, [&](std::exception_ptr) { cancelled = true; }));
  EXPECT_FALSE(cancelled);
  EXPECT_EQ(work->state(), WorkState::kFailed);
  expectThrows<DistBackendError>([&] { work->wait(std::chrono::seconds(1)); },
                                 {"dropped while queued"});
}

// Note [Waiting on a Work's future helps]: a wait on the Work's future, or on
// a future chained from it, runs the queued operation on the waiting thread,
// as Work::wait does; a wait whose timeout is shorter than the operation's
// own leaves it queued. The progress thread never takes the task here (its
// grace is a minute), so a completed wait can only mean the waiter ran it.
struct QueuedWork {
  std::shared_ptr<ProgressThread> progress =
      std::make_shared<ProgressThread>("future_help", ProgressTiming{.grace = std::chrono::seconds(60)});
  std::shared_ptr<Work> work = makeWork();
  std::thread::id ranOn;
  uint64_t ticket = 0;
  QueuedWork() {
    ticket = progress->runOrEnqueue(
        [this] {
          ranOn = std::this_thread::get_id();
          WorkCompletion::finish(*work);
        },
        /*inlineOk=*/false);
    WorkCompletion::setInlineRunner(*work, progress, ticket);
  }
};

TEST(WorkTest, WaitingOnItsFutureRunsTheQueuedOperation) {
  QueuedWork q;
  q.work->getFuture()->wait(std::chrono::seconds(10));
  EXPECT_EQ(q.ranOn, std::this_thread::get_id());
  EXPECT_TRUE(q.work->isCompleted());
}

TEST(WorkTest, WaitingOnAChainedFutureRunsTheQueuedOperation) {
  QueuedWork q;
  auto chained = q.work->getFuture()->then([](Future& f) { return f.value(); });
  chained->then([](Future& f) { return f.value(); })->wait(std::chrono::seconds(10));
  EXPECT_EQ(q.ranOn, std::this_thread::get_id());
}

TEST(WorkTest, AFutureWaitShorterThanTheOperationsTimeoutDoesNotRunIt) {
  QueuedWork q;  // the operation's timeout: 5 s (allreduceInfo)
  EXPECT_THROW(q.work->getFuture()->wait(std::chrono::milliseconds(20)), DistTimeoutError);
  EXPECT_EQ(q.ranOn, std::thread::id());
  EXPECT_TRUE(q.progress->runIfNext(q.ticket));  // let it finish before the test ends
}

}  // namespace
}  // namespace distlab::testing
