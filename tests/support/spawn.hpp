#pragma once
// Rank spawners for multi-rank tests (docs/DESIGN.md, house style 7): the public
// ranks::spawnRanks (emulator/launcher/rank_spawner.hpp, where the contract is
// written) with GoogleTest glue — an EXPECT_* that failed inside a rank marks
// that rank failed, as an exception would.
//
//   spawn(SpawnMode::kProcesses, 4, [](RankContext& ctx) {
//     ctx.store->add("counter", 1);
//     ...
//   }, SpawnOptions{.timeout = std::chrono::seconds(20)});
#include "emulator/launcher/rank_spawner.hpp"

namespace distlab::testing {

using ranks::RankContext;
using ranks::RankFn;
using ranks::RankKilled;
using ranks::RankOutcome;
using ranks::SpawnError;
using ranks::SpawnMode;
using ranks::SpawnOptions;
using ranks::spawnModeName;

// ranks::spawnRanks / ranks::spawnRanksCollect with a rankCheck that reports GoogleTest
// assertion failures raised inside the rank (options.rankCheck, if set, runs
// as well).
void spawn(SpawnMode mode, int worldSize, const RankFn& fn, const SpawnOptions& options = {});
std::vector<RankOutcome> spawnCollect(SpawnMode mode, int worldSize, const RankFn& fn,
                                      const SpawnOptions& options = {});

}  // namespace distlab::testing
