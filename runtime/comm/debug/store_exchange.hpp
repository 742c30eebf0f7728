#pragma once
// StoreExchange: an all-to-all exchange of one short value per rank through
// the store; the "helper group" of the DETAIL wrapper and the monitored
// barrier. Works for every backend because it needs nothing but the store.
//
// Each rank sets "<prefix><rank>" and waits for every other rank's key until
// the deadline, probing the missing ranks' liveness (liveness.hpp) every
// kProbeInterval, so a dead rank is reported at once instead of at the
// deadline. Blocking: returns by the deadline plus one probe interval.
#include <chrono>
#include <string>
#include <vector>

#include "runtime/comm/debug/liveness.hpp"
#include "runtime/comm/debug/rank_names.hpp"
#include "runtime/comm/store/store.hpp"
#include "runtime/core/clock.hpp"

namespace distlab::comm {

inline constexpr std::chrono::milliseconds kProbeInterval{100};

struct MissingRank {
  int rank = -1;  // group rank
  RankLiveness liveness;
};

struct ExchangeResult {
  std::vector<std::string> values;    // by group rank; empty strings when incomplete
  std::vector<MissingRank> missing;   // ranks whose key never came (ascending)
  bool peerDied = false;              // the transport saw a missing rank die
  // Every rank sent the caller's own value; `values` then holds only it
  // (ProcessGroupWrapper's Note [Agreeing by hash]).
  bool uniform = false;
  bool complete() const { return missing.empty(); }
  bool anyDead() const;
};

struct ExchangeSpec {
  std::string prefix;            // key prefix, unique per round
  int rank = 0;                  // group rank
  std::vector<int> globalRanks;  // global rank of each group rank (for liveness)
  // Stop waiting as soon as a missing rank is dead (the others keep waiting
  // until the deadline to tell dead from late).
  bool failFastOnDeath = true;
};

// Sets this rank's value and gathers everyone's (see the header comment).
ExchangeResult exchangeValues(Store& store, const ExchangeSpec& spec, const std::string& mine,
                              Deadline deadline);

// Waits for the given keys (owned by `ranks`) like exchangeValues, without
// setting anything. Returns the missing ones (empty: all there).
std::vector<MissingRank> waitForRanks(Store& store, const std::vector<std::string>& keys,
                                      const std::vector<int>& ranks,
                                      const std::vector<int>& globalRanks, Deadline deadline,
                                      bool failFastOnDeath);

// "  rank 1: alive (pid ...)\n  rank 2: dead (...)" lines, one per missing rank,
// named through `names` (Note [Naming ranks]).
std::string describeMissing(const std::vector<MissingRank>& missing, const RankNames& names);

}  // namespace distlab::comm
