#pragma once
// Liveness of ranks, so debug reports can say whether a missing rank is dead
// (its process is gone, or it stopped beating) or alive but not arriving.
//
// Note [Liveness records]
// Each registered rank publishes "<host> <pid> <wall ms>" under
// "dbg/alive/<global rank>" in the world store and refreshes it from one
// heartbeat thread per process every kHeartbeatInterval. probeRank() reads the
// record: same host -> the pid decides (gone or a zombie: dead); otherwise, or
// when the pid is this process's own (ranks as threads), a heartbeat older
// than kHeartbeatStale means dead. A rank that never registered is reported
// as "unknown" (it never reached the debug layer).
// Registration is reference counted per (store, rank): every group wrapper of
// a rank registers, the last one to go stops the heartbeat.
//
// Note [Heartbeats that scale]
// Every beat is a request to the one store server, so a fixed interval makes
// the server's load grow with the world: at 1,024 ranks, 4 a second each kept
// a core busy. The interval grows with the largest group a process registers
// for (heartbeatIntervalFor: 250 ms up to 16 ranks, then in proportion, at
// most kHeartbeatLongest), so the server sees about 64 beats a second at any
// size. The record carries the interval, and a heartbeat counts as stale
// after kStaleBeats of its own intervals.
#include <chrono>
#include <memory>
#include <string>

#include "runtime/comm/store/store.hpp"

namespace distlab::comm {

inline constexpr std::chrono::milliseconds kHeartbeatInterval{250};
inline constexpr std::chrono::milliseconds kHeartbeatLongest{4000};
inline constexpr int kStaleBeats = 6;
// Note [Heartbeats that scale]: the interval for a group of `groupSize` ranks.
std::chrono::milliseconds heartbeatIntervalFor(int groupSize);

// `groupSize`: the ranks of the group registering (the interval follows the
// largest registered).
void registerLiveness(const std::shared_ptr<Store>& store, int globalRank, int groupSize);
void unregisterLiveness(const Store* store, int globalRank);

enum class RankStatus { kAlive, kDead, kUnknown };

struct RankLiveness {
  RankStatus status = RankStatus::kUnknown;
  // "alive (pid 123 on host h, heartbeat 40 ms ago)", "dead (pid 123 on host h
  // has exited)", "dead (no heartbeat for 2300 ms; pid 123 on host h)",
  // "unknown (it never registered with the debug layer)".
  std::string detail;
};

// Never blocks (store check/get of one key).
RankLiveness probeRank(Store& store, int globalRank);

}  // namespace distlab::comm
