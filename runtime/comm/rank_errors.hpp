#pragma once
// Collective failures that name the ranks the operation was waiting for.
//
// Note [Who did not arrive]
// A backend that knows which ranks had not reached an operation when it timed
// out, or when a peer failed, throws these subclasses. A caller that reports
// on those ranks (the DETAIL wrapper's fingerprint exchange through the
// backend, Note [DETAIL through the backend]) reads missingRanks() instead of
// parsing text; every other caller sees DistTimeoutError or
// DistPeerFailureError as before, with the same message.
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/errors.hpp"

namespace distlab::comm {

class DistRanksTimeoutError : public DistTimeoutError {
 public:
  DistRanksTimeoutError(const std::string& what, std::vector<int> missing)
      : DistTimeoutError(what), missing_(std::move(missing)) {}
  const std::vector<int>& missingRanks() const { return missing_; }

 private:
  std::vector<int> missing_;  // group ranks, ascending
};

class DistRanksPeerFailureError : public DistPeerFailureError {
 public:
  DistRanksPeerFailureError(const std::string& what, std::vector<int> missing)
      : DistPeerFailureError(what), missing_(std::move(missing)) {}
  const std::vector<int>& missingRanks() const { return missing_; }

 private:
  std::vector<int> missing_;  // group ranks, ascending (the dead ones among them)
};

}  // namespace distlab::comm
