#pragma once
// Shared helpers of the debug suites: start a rank's world with a chosen debug
// level and short timeouts, and time how long a failure took to surface.
#include <chrono>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/comm/debug/flight_recorder.hpp"
#include "runtime/comm/debug/watchdog.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/debug_level.hpp"
#include "runtime/core/errors.hpp"
#include "tests/support/spawn.hpp"

namespace distlab::testing {

// Every case uses this operation timeout; detection must happen within
// kTimeout + kDetectionSlack (the bound).
inline constexpr std::chrono::milliseconds kTimeout{1000};
inline constexpr double kDetectionSlackSeconds = 2.0;

// Dumps go to `dumpDir` (a TempDir of the parent, read after the ranks exit).
inline comm::ProcessGroupPtr initDebugRank(RankContext& ctx, DebugLevel level,
                                           const std::string& dumpDir,
                                           std::chrono::milliseconds timeout = kTimeout) {
  setDebugLevel(level);
  comm::setFlightRecorderDumpPrefix(dumpDir + "/fr_rank_");
  comm::setErrorHandlingMode(comm::ErrorHandlingMode::kCleanUpOnly);
  comm::InitOptions o;
  o.backend = "shm";
  o.store = ctx.store;
  o.rank = ctx.rank;
  o.worldSize = ctx.worldSize;
  o.timeout = timeout;
  return comm::initProcessGroup(o);
}

struct Caught {
  bool thrown = false;
  std::string what;
  double seconds = 0;  // from the call to the exception
  bool peerFailure = false;
  bool timeout = false;
};

// Runs fn (which issues the faulty operation and waits for it) and records
// what it threw and when.
inline Caught catchFailure(const std::function<void()>& fn) {
  Caught c;
  Stopwatch watch;
  try {
    fn();
  } catch (const DistPeerFailureError& e) {
    c = {true, e.what(), 0, true, false};
  } catch (const DistTimeoutError& e) {
    c = {true, e.what(), 0, false, true};
  } catch (const std::exception& e) {
    c = {true, e.what(), 0, false, false};
  }
  c.seconds = watch.elapsedSeconds();
  return c;
}

// Detection bound of every case: the operation's timeout plus 2 s.
inline void expectDetectedInTime(const Caught& c, const std::string& what) {
  EXPECT_TRUE(c.thrown) << what << ": no error raised";
  EXPECT_LE(c.seconds, kTimeout.count() / 1000.0 + kDetectionSlackSeconds)
      << what << ": detected after " << c.seconds << " s";
  std::printf("[detect] %s: %.3f s\n", what.c_str(), c.seconds);
}

// Waits (bounded) until this rank's flight-recorder dump exists.
inline bool waitForDump(const RankContext& ctx, std::chrono::milliseconds limit) {
  const std::string path = comm::flightRecorderDumpPath(ctx.rank);
  const Deadline deadline = Deadline::after(limit);
  while (!std::filesystem::exists(path)) {
    if (deadline.expired()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Events between ranks through the spawn's store (not a collective, so the
// flight recorders never see them): a rank marks `name` once it has reached
// that point, others wait (bounded) for the marks they need. This replaces
// sleeping "long enough" for another rank to do something.
inline constexpr std::chrono::seconds kEventTimeout{20};

inline void markEvent(RankContext& ctx, const std::string& name) {
  ctx.store->setString("test-event/" + name + "/" + std::to_string(ctx.rank), "1");
}

// Throws (DistStoreError) when a mark does not come within `limit`.
inline void waitForEvent(RankContext& ctx, const std::string& name, const std::vector<int>& ranks,
                         std::chrono::milliseconds limit = kEventTimeout) {
  std::vector<std::string> keys;
  for (int r : ranks) keys.push_back("test-event/" + name + "/" + std::to_string(r));
  if (!keys.empty()) ctx.store->wait(keys, limit);
}

// Every rank not in `absent` (killed ranks) marks `name` and waits for the others.
inline void storeBarrier(RankContext& ctx, const std::string& name, const std::set<int>& absent = {},
                         std::chrono::milliseconds limit = kEventTimeout) {
  markEvent(ctx, name);
  std::vector<int> ranks;
  for (int r = 0; r < ctx.worldSize; ++r) {
    if (r != ctx.rank && !absent.count(r)) ranks.push_back(r);
  }
  waitForEvent(ctx, name, ranks, limit);
}

inline std::vector<std::string> dumpFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("fr_rank_", 0) == 0 && e.path().extension() == ".json") {
      out.push_back(e.path().string());
    }
  }
  return out;
}

}  // namespace distlab::testing
