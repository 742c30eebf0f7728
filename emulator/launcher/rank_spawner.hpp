#pragma once
// Start N ranks of a function, as threads of this process or as forked
// processes — what torch.multiprocessing.spawn does for a training function.
// Public API (installed with distlab::emulator); distlab's own multi-rank tests
// use it through tests/support/spawn.hpp.
//
//   ranks::spawnRanks(ranks::SpawnMode::kProcesses, 4, [](ranks::RankContext& ctx) {
//     auto pg = comm::initProcessGroup({.backend = "shm", .store = ctx.store,
//                                       .rank = ctx.rank, .worldSize = ctx.worldSize});
//     ...
//   }, ranks::SpawnOptions{.timeout = std::chrono::seconds(20)});
//
// kThreads runs every rank as a thread of this process sharing one HashStore;
// kProcesses forks one child per rank sharing a FileStore in a fresh temporary
// directory (removed afterwards). Children get PR_SET_PDEATHSIG and run in a
// process group of their own registered with the exit guard (Note [Exit
// guard] in exit_guard.hpp): however the caller ends, SIGKILL included, no
// rank, nothing a rank started, no shared-memory segment a rank created and
// no scratch file outlives it.
//
// spawnRanks() throws SpawnError for the first rank that failed (an exception, a
// failure reported by SpawnOptions::rankCheck, an unexpected exit or signal),
// naming the rank and the failure; children report their exception text back
// through a pipe. After the first failure the other ranks get `failFastGrace`
// to finish, then are killed (processes) so a caller never hangs on peers of a
// failed rank. spawnRanksCollect() returns every rank's outcome instead and waits
// for all ranks.
//
// Deadline: `timeout` bounds the whole run. In process mode ranks still running
// past it are SIGKILLed and SpawnError names them. Threads cannot be killed: in
// thread mode an overrun prints the ranks still running and ends the calling
// process with exit code 1 (the ranks' closures may reference the caller's
// stack), so give every blocking call inside a rank its own timeout.
//
// Killing a chosen rank: call ctx.killSelf() in that rank (SIGKILL in process
// mode — sockets close, the peers see a dead process; in thread mode the rank's
// thread unwinds with RankKilled). List the rank in SpawnOptions::mayDie so
// its death is not a failure.
//
// Thread-safety: spawnRanks() may be called from one thread at a time per process
// (process mode forks the caller).
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/comm/store/store.hpp"

namespace distlab::ranks {

enum class SpawnMode { kThreads, kProcesses };
// "Threads" / "Processes" (for parameterised test names).
std::string spawnModeName(SpawnMode mode);

// Thrown (thread mode) by RankContext::killSelf; the spawner treats it as the
// rank being killed.
struct RankKilled {};

struct RankContext {
  int rank = 0;
  int worldSize = 0;
  SpawnMode mode = SpawnMode::kThreads;
  std::shared_ptr<comm::Store> store;  // shared by all ranks of this spawn
  std::string tempDir;                 // scratch directory shared by all ranks
  // Ends this rank abruptly (see the header comment).
  [[noreturn]] void killSelf() const;
};

struct SpawnOptions {
  std::chrono::milliseconds timeout{60000};       // whole-run deadline
  std::chrono::milliseconds storeTimeout{30000};  // the shared store's default timeout
  std::chrono::milliseconds failFastGrace{5000};  // spawnRanks(): peers' time after a failure
  std::set<int> mayDie;                           // ranks allowed to be killed
  // Called on the rank's thread right after fn returns normally; a non-empty
  // result marks the rank failed with that text (a test framework reports
  // assertion failures that did not throw this way). Optional.
  std::function<std::string()> rankCheck;
};

struct RankOutcome {
  int rank = 0;
  bool ok = false;      // fn returned normally and rankCheck found nothing
  bool killed = false;  // killSelf() or a signal ended it
  std::string error;    // what failed, empty when ok
};

class SpawnError : public std::runtime_error {
 public:
  SpawnError(int rank, const std::string& what) : std::runtime_error(what), rank_(rank) {}
  // The failed rank, or -1 for a deadline overrun.
  int rank() const { return rank_; }

 private:
  int rank_;
};

using RankFn = std::function<void(RankContext&)>;

// Throws std::invalid_argument for worldSize < 1 or a non-positive timeout.
void spawnRanks(SpawnMode mode, int worldSize, const RankFn& fn,
                const SpawnOptions& options = {});

// Waits for every rank (or the deadline, which still throws SpawnError) and
// returns the outcomes in rank order; a rank's failure is reported, not thrown.
std::vector<RankOutcome> spawnRanksCollect(SpawnMode mode, int worldSize, const RankFn& fn,
                                           const SpawnOptions& options = {});

}  // namespace distlab::ranks
