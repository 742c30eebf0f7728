// FaultPlan trigger semantics: which fault fires on which collective / step,
// on which rank, how often; and the event log it writes.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "emulator/faults/fault_plan.hpp"
#include "tests/support/temp_dir.hpp"

namespace distlab::emulator {
namespace {

FaultSpec fault(const std::string& kind, std::vector<int> ranks, uint64_t atSeq, int atStep = -1) {
  FaultSpec f;
  f.kind = kind;
  f.ranks = std::move(ranks);
  f.atSeq = atSeq;
  f.atStep = atStep;
  return f;
}

std::shared_ptr<FaultPlan> planFor(const std::vector<FaultSpec>& faults, int rank,
                                   const std::string& log = "") {
  return std::make_shared<FaultPlan>(faults, rank, std::make_shared<EventLog>(log),
                                     std::chrono::milliseconds(1000));
}

TEST(FaultPlan, FiresOnlyOnItsRankAndSeq) {
  std::vector<FaultSpec> faults{fault("skip_collective", {1}, 3)};
  auto r0 = planFor(faults, 0);
  auto r1 = planFor(faults, 1);
  for (uint64_t seq = 1; seq <= 5; ++seq) EXPECT_EQ(r0->onCollective(seq), nullptr);
  EXPECT_EQ(r1->onCollective(2), nullptr);
  const FaultSpec* f = r1->onCollective(3);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->kind, "skip_collective");
  EXPECT_EQ(r1->onCollective(4), nullptr);
}

TEST(FaultPlan, StragglerDelaysCountConsecutiveCollectives) {
  auto f = fault("straggler", {0}, 2);
  f.count = 3;
  f.delayMs = 1;
  auto plan = planFor({f}, 0);
  EXPECT_EQ(plan->onCollective(1), nullptr);
  EXPECT_NE(plan->onCollective(2), nullptr);
  EXPECT_NE(plan->onCollective(3), nullptr);
  EXPECT_NE(plan->onCollective(4), nullptr);
  EXPECT_EQ(plan->onCollective(5), nullptr);
}

TEST(FaultPlan, AtStepFiresOnceOnTheFirstCollectiveOfThatStep) {
  auto plan = planFor({fault("mismatch", {0}, 0, 2)}, 0);
  plan->setStep(1);
  EXPECT_EQ(plan->onCollective(7), nullptr);
  plan->setStep(2);
  EXPECT_NE(plan->onCollective(8), nullptr);
  EXPECT_EQ(plan->onCollective(9), nullptr);
}

TEST(FaultPlan, HangCrashStragglerAtStepAreStepFaultsNotCollectiveFaults) {
  auto plan = planFor({fault("crash", {0}, 0, 1)}, 0);
  plan->setStep(1);
  EXPECT_EQ(plan->onCollective(1), nullptr);
  EXPECT_TRUE(plan->stepFaults(0).empty());
  auto fired = plan->stepFaults(1);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0]->kind, "crash");
  EXPECT_TRUE(plan->stepFaults(1).empty());  // once
}

TEST(FaultPlan, StoreDeathTurnsTheStoreOffFromItsSeqOn) {
  auto plan = planFor({fault("store_death", {0, 1}, 2)}, 1);
  EXPECT_FALSE(plan->storeDead());
  EXPECT_EQ(plan->onCollective(1), nullptr);
  EXPECT_EQ(plan->onCollective(2), nullptr);  // the collective itself runs
  EXPECT_TRUE(plan->storeDead());
}

TEST(FaultPlan, SlowStoreDelayAndEngineFaults) {
  auto slow = fault("slow_store", {0}, 0);
  slow.delayMs = 25;
  auto unused = fault("unused_param", {0}, 0);
  auto skip = fault("skip_backward", {0}, 0, 3);
  auto plan = planFor({slow, unused, skip}, 0);
  EXPECT_EQ(plan->storeDelay(), std::chrono::milliseconds(25));
  EXPECT_NE(plan->engineFault("unused_param", -1), nullptr);
  EXPECT_EQ(plan->engineFault("skip_backward", 2), nullptr);
  EXPECT_NE(plan->engineFault("skip_backward", 3), nullptr);
  EXPECT_EQ(planFor({slow}, 1)->storeDelay(), std::chrono::milliseconds(0));
}

TEST(FaultPlan, RecordFiredWritesAnEventLine) {
  testing::TempDir dir;
  auto hang = fault("hang", {0}, 1);
  auto plan = planFor({hang}, 0, dir.file("rank0.events"));
  plan->setStep(4);
  plan->recordFired(hang, 1, "forever");
  std::ifstream in(dir.file("rank0.events"));
  std::string line;
  std::getline(in, line);
  std::istringstream ls(line);
  int64_t us = 0;
  std::string rest;
  ls >> us;
  std::getline(ls, rest);
  EXPECT_GT(us, 0);
  EXPECT_EQ(rest, " fault hang seq=1 step=4 forever");
}

}  // namespace
}  // namespace distlab::emulator
