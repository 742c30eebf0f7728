// A program that starts two ranks with ranks::spawnRanks (process mode) and is
// killed by the exit tests mid-spawn: rank 0 creates the shm group's segment
// and waits for rank 1 to attach; rank 1 starts a grandchild (no death signal
// of its own), prints "grandchild started", and never joins. Both waits are
// bounded (60 s), far past the moment the tests kill the program.
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "emulator/launcher/rank_spawner.hpp"
#include "runtime/comm/group_management.hpp"

namespace {

constexpr std::chrono::seconds kBound(60);

void waitBounded() { ::poll(nullptr, 0, static_cast<int>(kBound.count() * 1000)); }

}  // namespace

int main() {
  using namespace distlab;
  ranks::spawnRanks(
      ranks::SpawnMode::kProcesses, 2,
      [](ranks::RankContext& ctx) {
        if (ctx.rank == 1) {
          if (::fork() == 0) {
            waitBounded();
            ::_exit(0);
          }
          std::printf("grandchild started\n");
          std::fflush(stdout);
          waitBounded();
          return;
        }
        comm::initProcessGroup({.backend = "shm", .store = ctx.store, .worldSize = ctx.worldSize,
                                .rank = ctx.rank, .timeout = kBound});
      },
      ranks::SpawnOptions{.timeout = 2 * kBound});
  return 0;
}
