#pragma once
// Note [Who completes a Work]
// Only the backend that runs an operation moves its Work through its states:
// started, the execution bracket (Note [Work failure and the caller's
// tensors]), completed or failed, the source of a recv. Anyone else -- a
// caller, the watchdog -- can only fail it from outside, through
// Work::abort(), which the bracket defers until the backend has let go of the
// caller's tensors. So a Work never reports success for an operation its
// backend did not finish, and a failed Work's tensors are never written again.
//
// The backend's side of Work is private; this class is its only door, and
// only the files of a backend include this header: the backends under
// runtime/comm/backends/ and the decorators that are backends themselves
// (a decorator that hands the caller its own Work completes it from the inner
// one: CUDA staging, link emulation, DETAIL's point-to-point checks). The
// `layering` test fails when any other file includes it.
#include <cstdint>
#include <exception>
#include <memory>
#include <utility>

#include "runtime/comm/work.hpp"

namespace distlab::comm {

class WorkCompletion {
 public:
  WorkCompletion() = delete;

  static void markStarted(Work& work) { work.markStarted(); }
  // Success when `error` is null. See Work::finish for the bracket's rules.
  static void finish(Work& work, std::exception_ptr error = nullptr) {
    work.finish(std::move(error));
  }
  static void setSourceRank(Work& work, int rank) { work.setSourceRank(rank); }
  // Note [Work failure and the caller's tensors].
  template <typename Cancel>
  static bool beginExecution(Work& work, Cancel&& cancel, int64_t startedNs = 0) {
    return work.beginExecution(std::forward<Cancel>(cancel), startedNs);
  }
  static void endExecution(Work& work, std::exception_ptr error) {
    work.endExecution(std::move(error));
  }
  // Note [Unshared execution].
  static void startUnshared(Work& work, int64_t startedNs) { work.startUnshared(startedNs); }
  static void finishUnshared(Work& work, std::exception_ptr error) {
    work.finishUnshared(std::move(error));
  }
  // Note [Waiting helps].
  static void setInlineRunner(Work& work, std::weak_ptr<InlineRunner> runner, uint64_t ticket) {
    work.setInlineRunner(std::move(runner), ticket);
  }
};

}  // namespace distlab::comm
