#pragma once
// Aligning the ranks' trace clocks through the store.
//
// Note [Trace clock alignment]
// Each rank stamps its trace with its own monotonic clock; the runner merges
// the ranks' traces on rank 0's clock. Rank r measures its offset to rank 0
// the way NTP does, over the store the ranks already share: it stamps t0,
// sets a ping key, waits for rank 0's pong carrying rank 0's clock reading T,
// and stamps t1. Rank 0's clock read T somewhere between t0 and t1 (on r's
// clock), so offset = T - (t0 + t1) / 2 is wrong by at most (t1 - t0) / 2,
// half the round trip. Of `rounds` exchanges the one with the shortest round
// trip is kept; its half round trip is the stated bound. Rank 0's offset is
// 0 with bound 0. On one machine the clocks are the same (CLOCK_MONOTONIC),
// so the measured offsets are within their bounds of zero -- which the tests
// check, also with a clock deliberately shifted on one rank.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "runtime/comm/store/store.hpp"

namespace distlab::emulator {

struct ClockAlignOptions {
  int rounds = 8;
  std::string prefix = "trace/clock";
  std::chrono::milliseconds timeout{10000};  // per store wait
  std::function<int64_t()> clock;            // default: monotonicNowNs
};

struct ClockAlignment {
  int64_t offsetNs = 0;  // add to this rank's timestamps to get rank 0's clock
  int64_t boundNs = 0;   // |error| <= boundNs
};

// Note [Aligning a thousand clocks]
// Rank 0 answers the ranks one after another, `rounds` exchanges each, so
// the last rank's first pong comes after (n - 1) x rounds store round trips.
// At 1,024 ranks sharing 2 cores that passed the 10 s wait (rank 509 timed
// out). So a wide world takes fewer rounds (the best of 2 still bounds the
// error by half a round trip) and each wait allows for the queue ahead of it.
ClockAlignOptions clockAlignOptionsFor(int worldSize);

// Collective over the store: every rank of [0, worldSize) must call it with
// the same options. Blocks until rank 0 has answered every rank (each store
// wait bounded by options.timeout; DistStoreError/DistTimeoutError past it).
ClockAlignment alignClocks(comm::Store& store, int rank, int worldSize,
                           const ClockAlignOptions& options = {});

}  // namespace distlab::emulator
