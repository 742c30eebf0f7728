#pragma once
// The error hierarchy every layer throws (docs/DESIGN.md, "Errors").
//
// Exceptions at API boundaries, shaped like PyTorch's: everything derives from
// `Error` (PyTorch's RuntimeError); bad arguments and bad user input are
// `ValueError`; distributed failures are `DistError` and its subclasses.
// Subclasses exist only where callers must tell cases apart:
//   DistTimeoutError     an operation passed its deadline (callers may retry/abort)
//   DistPeerFailureError a peer process is gone (the group is unusable)
#include <stdexcept>
#include <string>

namespace distlab {

// Base of every distlab exception (PyTorch: RuntimeError).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A bad argument, flag, file or environment value. The message names the input
// and what would fix it.
class ValueError : public Error {
 public:
  using Error::Error;
};

// Base of all distributed errors (PyTorch: torch.distributed.DistError).
class DistError : public Error {
 public:
  using Error::Error;
};

// A backend failed to run an operation (PyTorch: DistBackendError).
class DistBackendError : public DistError {
 public:
  using DistError::DistError;
};

// A networking layer failed, e.g. a connection reset (PyTorch: DistNetworkError).
class DistNetworkError : public DistError {
 public:
  using DistError::DistError;
};

// A store operation failed or timed out (PyTorch: DistStoreError).
class DistStoreError : public DistError {
 public:
  using DistError::DistError;
};

// A collective or point-to-point operation ran past its timeout.
class DistTimeoutError : public DistBackendError {
 public:
  using DistBackendError::DistBackendError;
};

// A peer process died (or its connection dropped) while an operation needed it.
class DistPeerFailureError : public DistNetworkError {
 public:
  using DistNetworkError::DistNetworkError;
};

}  // namespace distlab
