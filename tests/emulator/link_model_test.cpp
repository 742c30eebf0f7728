// The alpha-beta link model and the LinkBackend decorator's timing contract
// (completion no earlier than the model says; the issuing thread never waits).
#include <gtest/gtest.h>

#include <atomic>

#include "emulator/link/link_backend.hpp"
#include "emulator/link/link_model.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/comm/work_completion.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

using comm::OpType;

TEST(BusFactor, MatchesNcclTests) {
  EXPECT_DOUBLE_EQ(busFactor(OpType::kAllreduce, 4), 1.5);           // 2(n-1)/n
  EXPECT_DOUBLE_EQ(busFactor(OpType::kAllgatherBase, 4), 0.75);      // (n-1)/n
  EXPECT_DOUBLE_EQ(busFactor(OpType::kReduceScatterBase, 8), 0.875);
  EXPECT_DOUBLE_EQ(busFactor(OpType::kAlltoall, 2), 0.5);
  EXPECT_DOUBLE_EQ(busFactor(OpType::kBroadcast, 4), 1.0);
  EXPECT_DOUBLE_EQ(busFactor(OpType::kSend, 2), 1.0);
  EXPECT_DOUBLE_EQ(busFactor(OpType::kBarrier, 4), 0.0);
  EXPECT_DOUBLE_EQ(busFactor(OpType::kAllreduce, 1), 0.0);
}

TEST(LinkModel, AlphaPlusBytesTimesFactorOverBandwidth) {
  LinkModel m{"", 10.0, 2.0};  // 10 us, 2 GB/s
  // 4e6 bytes allreduce on 4 ranks: 10e-6 + 4e6 * 1.5 / 2e9 = 0.00301 s
  EXPECT_NEAR(m.seconds(OpType::kAllreduce, 4'000'000, 4), 0.00301, 1e-12);
  EXPECT_NEAR(m.seconds(OpType::kBarrier, 0, 4), 10e-6, 1e-15);
  EXPECT_EQ(LinkModel{}.seconds(OpType::kAllreduce, 1 << 20, 4), 0.0);  // off
}

TEST(LinkModel, PresetsAndUnknownName) {
  EXPECT_EQ(linkPreset("ethernet-10g").bandwidthGBs, 1.25);
  EXPECT_GT(linkPreset("nvlink").bandwidthGBs, linkPreset("pcie").bandwidthGBs);
  try {
    linkPreset("token-ring");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown link preset 'token-ring'; known presets: "),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("ethernet-1g"), std::string::npos);
  }
}

// A backend whose allreduce completes at once.
class InstantBackend : public comm::Backend {
 public:
  InstantBackend() : Backend(0, 2) {}
  std::string name() const override { return "instant"; }
  comm::WorkPtr allreduce(const Tensor& t, const comm::AllreduceOptions& o) override {
    auto info = comm::makeWorkInfo("g", 0, OpType::kAllreduce, o.seq, {t}, {t},
                                   std::chrono::milliseconds(1000));
    return comm::Work::completed(info, {t});
  }
};

TEST(LinkBackend, CompletesAtTheModelledTimeWithoutBlockingTheCaller) {
  // 40 ms of latency per op, infinite-ish bandwidth.
  LinkBackend link(std::make_shared<InstantBackend>(), LinkModel{"", 40000.0, 1000.0});
  Tensor t = zeros({4});
  Stopwatch watch;
  comm::AllreduceOptions o;
  auto w1 = link.allreduce(t, o);
  auto w2 = link.allreduce(t, o);
  double issued = watch.elapsedSeconds();
  EXPECT_LT(issued, 0.035);  // issue did not wait for the link
  EXPECT_FALSE(w2->isCompleted());
  w1->wait(std::chrono::milliseconds(5000));
  EXPECT_GE(watch.elapsedSeconds(), 0.040);
  w2->wait(std::chrono::milliseconds(5000));
  // FIFO link: the second op starts when the first ends.
  EXPECT_GE(watch.elapsedSeconds(), 0.080);
  EXPECT_TRUE(w2->isSuccess());
  EXPECT_EQ(w2->result().size(), 1u);
}

// A backend whose receives complete when the test says: the sender's
// arrival, as the real backend sees it.
class LateSenderBackend : public comm::Backend {
 public:
  LateSenderBackend() : Backend(1, 2) {}
  std::string name() const override { return "late-sender"; }
  comm::WorkPtr recv(const Tensor& t, int src, const comm::RecvOptions& o) override {
    auto info = comm::makeWorkInfo("g", 1, OpType::kRecv, o.seq, {}, {t},
                                   std::chrono::milliseconds(1000), src);
    pending = std::make_shared<comm::Work>(info, std::vector<Tensor>{t});
    return pending;
  }
  comm::WorkPtr pending;
};

// Note [Messages on emulated links]: a receive posted long before its sender
// arrives completes the model's time after the arrival, not at once.
TEST(LinkBackend, AReceivePostedEarlyTakesTheLinkTimeAfterItsSenderArrives) {
  auto inner = std::make_shared<LateSenderBackend>();
  LinkBackend link(inner, LinkModel{"", 40000.0, 1000.0});  // 40 ms a message
  Tensor t = zeros({4});
  auto received = link.recv(t, 0, comm::RecvOptions{});
  // Let the modelled 40 ms pass: wait for a 40 ms operation on another link.
  LinkBackend clock(std::make_shared<InstantBackend>(), LinkModel{"", 40000.0, 1000.0});
  clock.allreduce(t, comm::AllreduceOptions{})->wait(std::chrono::milliseconds(5000));
  EXPECT_FALSE(received->isCompleted());  // no data yet
  Stopwatch sinceArrival;
  comm::WorkCompletion::finish(*inner->pending);  // the sender arrives
  ASSERT_TRUE(received->wait(std::chrono::milliseconds(5000)));
  EXPECT_GE(sinceArrival.elapsedSeconds(), 0.040);
  EXPECT_TRUE(received->isSuccess());
}

TEST(LinkBackend, ScheduledCallbacksRunInTimeOrder) {
  std::atomic<int> order{0};
  int first = -1, second = -1;
  std::atomic<int> done{0};
  auto now = std::chrono::steady_clock::now();
  scheduleAt(now + std::chrono::milliseconds(30), [&] { second = order++; ++done; });
  scheduleAt(now + std::chrono::milliseconds(10), [&] { first = order++; ++done; });
  Deadline deadline = Deadline::after(std::chrono::milliseconds(5000));
  while (done.load() < 2 && !deadline.expired()) std::this_thread::yield();
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

}  // namespace
}  // namespace distlab::emulator
