#include "runtime/comm/failure_reason.hpp"

#include "runtime/core/errors.hpp"

namespace distlab::comm {

FailureReason FailureReason::timedOut(const std::string& reason) {
  return {kTimeout, "timed out: " + reason};
}

FailureReason FailureReason::aborted(const std::string& reason) {
  return {kAborted, "aborted: " + reason};
}

FailureReason FailureReason::shutDown() { return {kBackendError, "the backend was shut down"}; }

namespace {
constexpr std::string_view kKindNames[] = {"timeout", "peer_failure", "aborted",
                                           "backend_error"};
}  // namespace

std::string_view failureKindName(FailureReason::Kind kind) {
  return kKindNames[static_cast<size_t>(kind)];
}

std::optional<FailureReason::Kind> parseFailureKind(std::string_view name) {
  for (size_t k = 0; k < std::size(kKindNames); ++k) {
    if (kKindNames[k] == name) return static_cast<FailureReason::Kind>(k);
  }
  return std::nullopt;
}

FailureReason::Kind failureKindOf(const std::exception_ptr& error) {
  if (!error) return FailureReason::kBackendError;
  try {
    std::rethrow_exception(error);
  } catch (const DistTimeoutError&) {
    return FailureReason::kTimeout;
  } catch (const DistNetworkError&) {  // DistPeerFailureError included
    return FailureReason::kPeerFailure;
  } catch (...) {
    return FailureReason::kBackendError;
  }
}

FailureReason failureReasonOf(const std::exception_ptr& error) {
  FailureReason reason{failureKindOf(error), "unknown error"};
  try {
    if (error) std::rethrow_exception(error);
  } catch (const std::exception& e) {
    reason.text = e.what();
  } catch (...) {
  }
  return reason;
}

}  // namespace distlab::comm
