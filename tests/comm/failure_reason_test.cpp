// FailureReason (Note [Failure kinds are values]): the kind, not the text,
// decides the error class of a refusal and what a failure record says.
#include <gtest/gtest.h>

#include "runtime/comm/backend.hpp"
#include "runtime/comm/failure_reason.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::comm {
namespace {

TEST(FailureReason, KindNamesRoundTrip) {
  for (auto kind : {FailureReason::kTimeout, FailureReason::kPeerFailure, FailureReason::kAborted,
                    FailureReason::kBackendError}) {
    EXPECT_EQ(parseFailureKind(failureKindName(kind)), kind);
  }
  EXPECT_EQ(failureKindName(FailureReason::kPeerFailure), "peer_failure");
  EXPECT_FALSE(parseFailureKind("timed out").has_value());
  EXPECT_FALSE(parseFailureKind("").has_value());
}

TEST(FailureReason, KindOfAnExceptionFollowsItsClass) {
  EXPECT_EQ(failureKindOf(std::make_exception_ptr(DistTimeoutError("x"))), FailureReason::kTimeout);
  EXPECT_EQ(failureKindOf(std::make_exception_ptr(DistPeerFailureError("x"))),
            FailureReason::kPeerFailure);
  EXPECT_EQ(failureKindOf(std::make_exception_ptr(DistNetworkError("x"))),
            FailureReason::kPeerFailure);
  // The text says "timed out", the class does not: the class decides.
  EXPECT_EQ(failureKindOf(std::make_exception_ptr(DistBackendError("timed out: later"))),
            FailureReason::kBackendError);
  EXPECT_EQ(failureKindOf(std::make_exception_ptr(std::runtime_error("x"))),
            FailureReason::kBackendError);
  EXPECT_EQ(failureKindOf(nullptr), FailureReason::kBackendError);
  const FailureReason r = failureReasonOf(std::make_exception_ptr(DistTimeoutError("late")));
  EXPECT_EQ(r.kind, FailureReason::kTimeout);
  EXPECT_EQ(r.text, "late");
}

TEST(FailureReason, RefusalClassComesFromTheKind) {
  auto refusal = [](const FailureReason& why) {
    try {
      std::rethrow_exception(refusedWorkError("allreduce", "g", why));
    } catch (const DistTimeoutError& e) {
      return std::string("timeout: ") + e.what();
    } catch (const DistBackendError& e) {
      return std::string("backend: ") + e.what();
    }
  };
  EXPECT_EQ(refusal(FailureReason::timedOut("watchdog")),
            "timeout: allreduce: group 'g' refuses new work: timed out: watchdog");
  // A timeout carried on by a cascade keeps its kind whatever its text says.
  EXPECT_EQ(refusal({FailureReason::kTimeout, "rank 1 failed: ..."}),
            "timeout: allreduce: group 'g' refuses new work: rank 1 failed: ...");
  // And a text that merely starts like a timeout is not one.
  EXPECT_EQ(refusal({FailureReason::kBackendError, "timed out: quoted"}),
            "backend: allreduce: group 'g' refuses new work: timed out: quoted");
  EXPECT_EQ(refusal(FailureReason::aborted("stop")),
            "backend: allreduce: group 'g' refuses new work: aborted: stop");
}

}  // namespace
}  // namespace distlab::comm
