#pragma once
// FailureReason: why a backend refuses work, as a kind and a text.
//
// Note [Failure kinds are values]
// Whether a failure was a timeout decides which error class callers get
// (Note [A refusal after a timeout is a timeout] in backend.hpp) and what a
// peer reports (Note [A peer's timeout is a timeout]). That decision reads
// `kind`, never the text: the text is for people, and may quote other
// failures (a cascade names the first rank's reason). A backend sets the kind
// where it learns it -- from its own watchdog timeout, from the class of the
// exception that failed an operation (failureKindOf), or from the kind a peer
// published -- and passes it on unchanged.
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

namespace distlab::comm {

struct FailureReason {
  enum Kind : uint8_t {
    kTimeout,       // an operation's deadline passed (here or at a peer)
    kPeerFailure,   // a peer died or its connection broke
    kAborted,       // abort() was called
    kBackendError,  // anything else: bad input found late, a transport error, shut down
  };
  Kind kind = kBackendError;
  std::string text;

  // "timed out: <reason>", "aborted: <reason>" (the texts users have seen so far).
  static FailureReason timedOut(const std::string& reason);
  static FailureReason aborted(const std::string& reason);
  // "the backend was shut down" (kBackendError).
  static FailureReason shutDown();

  bool isTimeout() const { return kind == kTimeout; }
};

// "timeout", "peer_failure", "aborted", "backend_error" (failure records, logs).
std::string_view failureKindName(FailureReason::Kind kind);
// The inverse of failureKindName; nullopt for any other text.
std::optional<FailureReason::Kind> parseFailureKind(std::string_view name);
// The kind an exception stands for: DistTimeoutError -> kTimeout,
// DistPeerFailureError / DistNetworkError -> kPeerFailure, anything else ->
// kBackendError.
FailureReason::Kind failureKindOf(const std::exception_ptr& error);
// failureKindOf(error) and the exception's what().
FailureReason failureReasonOf(const std::exception_ptr& error);

}  // namespace distlab::comm
