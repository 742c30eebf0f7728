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
#include <chrono>
#include <memory>
#include <string>

#include "runtime/comm/store/store.hpp"

namespace distlab::comm {

inline constexpr std::chrono::milliseconds kHeartbeatInterval{250};
inline constexpr std::chrono::milliseconds kHeartbeatStale{1500};

void registerLiveness(const std::shared_ptr<Store>& store, int globalRank);
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
