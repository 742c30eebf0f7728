// Join, Joinable, JoinHook on real ranks (forked processes, shm backend): a
// small Joinable whose iteration is one allreduce of (rank + 1) and whose hook
// shadows it with zeros. Checks the sums every iteration, the shadow counts,
// isLastJoiner, the early-termination texts on every rank in the same
// iteration, the bad-input errors and the skew warning.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/core/errors.hpp"
#include "runtime/join/join.hpp"
#include "tests/support/spawn.hpp"
#include "tests/support/test_groups.hpp"

namespace distlab::testing {
namespace {

using std::chrono::seconds;

// Records what its hook did; one allreduce per iteration.
class SumJoinable : public join::Joinable {
 public:
  explicit SumJoinable(comm::ProcessGroupPtr group) : group_(std::move(group)) {}

  struct Hook : join::JoinHook {
    explicit Hook(SumJoinable& owner) : owner_(owner) {}
    void mainHook() override {
      Tensor zero = zeros({1});
      owner_.group_->allreduce(zero)->wait();
      if (owner_.order_) owner_.order_->push_back(owner_.tag_);
      ++owner_.mainHooks;
    }
    void postHook(bool isLastJoiner) override { owner_.lastJoiner = isLastJoiner; }
    SumJoinable& owner_;
  };

  std::unique_ptr<join::JoinHook> joinHook(const join::JoinKwargs& kwargs) override {
    seenFlag = kwargs.flag("probe", false);
    return std::make_unique<Hook>(*this);
  }
  Device joinDevice() const override { return Device::cpu(); }
  comm::ProcessGroupPtr joinProcessGroup() const override { return group_; }

  // One iteration: the vote (returned), then the allreduce; returns its sum.
  double iterate(comm::WorkPtr* vote = nullptr) {
    comm::WorkPtr w = join::Join::notifyJoinContext(*this);
    if (vote) *vote = w;
    Tensor t = full({1}, static_cast<double>(group_->rank() + 1));
    group_->allreduce(t)->wait();
    return t.item<double>();
  }

  comm::ProcessGroupPtr group_;
  std::vector<std::string>* order_ = nullptr;
  std::string tag_;
  int mainHooks = 0;
  bool lastJoiner = false;
  bool seenFlag = false;
};

comm::ProcessGroupPtr groupOf(const RankContext& ctx, const std::string& name = "join") {
  return makeTestGroup(ctx, "shm", name, seconds(10));
}

TEST(JoinTest, UnevenIterationsShadowedUntilAllJoined) {
  const std::vector<int> iters{5, 3, 0, 5};
  spawn(SpawnMode::kProcesses, 4, [&](RankContext& ctx) {
    auto group = groupOf(ctx);
    SumJoinable a(group);
    std::vector<std::string> order;
    a.order_ = &order;
    a.tag_ = "a";
    join::Join join({&a}, {.kwargs = {{{"probe", true}}}});
    EXPECT_TRUE(a.seenFlag);
    EXPECT_TRUE(a.joinConfig().enable && a.joinConfig().isFirstJoinable);
    for (int t = 0; t < iters[ctx.rank]; ++t) {
      comm::WorkPtr vote;
      const double sum = a.iterate(&vote);
      double expected = 0, active = 0;
      for (int r = 0; r < 4; ++r) {
        if (iters[r] > t) expected += r + 1, active += 1;
      }
      EXPECT_EQ(sum, expected) << "iteration " << t;
      ASSERT_TRUE(vote);
      vote->wait();
      EXPECT_EQ(vote->result().front().item<float>(), active) << "iteration " << t;
    }
    join.exit();
    EXPECT_EQ(join.shadowedIterations(), 5 - iters[ctx.rank]);
    EXPECT_EQ(a.mainHooks, 5 - iters[ctx.rank]);
    EXPECT_EQ(a.lastJoiner, iters[ctx.rank] == 5);
    EXPECT_FALSE(a.joinConfig().enable);  // reset after the scope
    EXPECT_EQ(join::Join::notifyJoinContext(a), nullptr);
  }, {.timeout = seconds(60)});
}

TEST(JoinTest, HooksRunInOrderAndOnlyTheFirstJoinableVotes) {
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto group = groupOf(ctx);
    SumJoinable a(group), b(group);
    std::vector<std::string> order;
    a.order_ = b.order_ = &order;
    a.tag_ = "a";
    b.tag_ = "b";
    {
      join::Join join({&a, &b});
      EXPECT_FALSE(b.joinConfig().isFirstJoinable);
      EXPECT_EQ(join::Join::notifyJoinContext(b), nullptr);
      for (int t = 0; t < 1 + ctx.rank; ++t) {
        a.iterate();
        Tensor t2 = full({1}, 1.0);  // b's collective of the iteration
        group->allreduce(t2)->wait();
      }
    }  // the destructor ends the scope (Note [Join as a scope])
    const std::vector<std::string> expected =
        ctx.rank == 0 ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{};
    EXPECT_EQ(order, expected);
    EXPECT_EQ(a.lastJoiner, ctx.rank == 1);
    EXPECT_EQ(b.lastJoiner, ctx.rank == 1);
  }, {.timeout = seconds(60)});
}

TEST(JoinTest, EarlyTerminationThrowsOnEveryRankInTheSameIteration) {
  const std::vector<int> iters{4, 2, 4};
  spawn(SpawnMode::kProcesses, 3, [&](RankContext& ctx) {
    auto group = groupOf(ctx);
    SumJoinable a(group);
    join::Join join({&a}, {.throwOnEarlyTermination = true});
    int reached = -1;
    try {
      for (int t = 0; t < iters[ctx.rank]; ++t) {
        reached = t;
        a.iterate();
      }
      join.exit();
      ADD_FAILURE() << "rank " << ctx.rank << " did not throw";
    } catch (const Error& e) {
      if (ctx.rank == 1) {
        EXPECT_STREQ(e.what(), "Rank 1 exhausted all inputs.");
        EXPECT_EQ(reached, 1);
      } else {
        EXPECT_STREQ(e.what(),
                     "Detected at least one rank that exhausted inputs. Throwing across all "
                     "ranks.");
        EXPECT_EQ(reached, 2);  // the iteration after rank 1's last one
      }
    }
    EXPECT_FALSE(a.joinConfig().enable);
  }, {.timeout = seconds(60)});
}

TEST(JoinTest, DisabledJoinIssuesNothing) {
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto group = groupOf(ctx);
    SumJoinable a(group);
    EXPECT_EQ(join::Join::notifyJoinContext(a), nullptr);  // outside any Join
    join::Join join({&a}, {.enable = false});
    EXPECT_EQ(join::Join::notifyJoinContext(a), nullptr);
    EXPECT_EQ(a.iterate(), 3.0);
    join.exit();
    EXPECT_EQ(a.mainHooks, 0);
    EXPECT_TRUE(a.lastJoiner == false);
  }, {.timeout = seconds(60)});
}

TEST(JoinTest, BadInputNamesTheArgument) {
  EXPECT_THROW(
      {
        try {
          join::Join join({});
        } catch (const ValueError& e) {
          EXPECT_STREQ(e.what(), "The join context manager requires at least one joinable");
          throw;
        }
      },
      ValueError);
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto g1 = groupOf(ctx, "first");
    auto g2 = groupOf(ctx, "second");
    SumJoinable a(g1), b(g2);
    try {
      join::Join join({&a, &b});
      ADD_FAILURE() << "no error for two process groups";
    } catch (const ValueError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("Using join context manager with multiple process groups"),
                std::string::npos) << what;
      EXPECT_NE(what.find("joinables[1] uses group 'second'"), std::string::npos) << what;
    }
    EXPECT_THROW(join::Join({&a, nullptr}), ValueError);
    EXPECT_FALSE(a.joinConfig().enable);  // a failed construction configures nothing
  }, {.timeout = seconds(60)});
}

TEST(JoinTest, SkewWarningAfterAThousandShadowedIterations) {
  const int kIters = static_cast<int>(join::kSkewWarnThreshold) + 2;
  spawn(SpawnMode::kProcesses, 2, [&](RankContext& ctx) {
    auto group = groupOf(ctx);
    SumJoinable a(group);
    join::Join join({&a});
    if (ctx.rank == 1) {
      for (int t = 0; t < kIters; ++t) a.iterate();
      join.exit();
      return;
    }
    ::testing::internal::CaptureStderr();
    join.exit();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(join.shadowedIterations(), kIters);
    EXPECT_NE(err.find("Detected uneven input skew of greater than 1000. This means that rank 0 "
                       "has at least 1000 fewer inputs than other currently-active ranks."),
              std::string::npos)
        << err;
    EXPECT_EQ(err.find("Detected uneven input skew", err.find("skew") + 1), std::string::npos)
        << "warned more than once: " << err;
  }, {.timeout = seconds(60)});
}

}  // namespace
}  // namespace distlab::testing
