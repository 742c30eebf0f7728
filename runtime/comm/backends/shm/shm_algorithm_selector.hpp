#pragma once
// The one table that picks a shm algorithm per (operation, bytes, world size)
// (docs/DESIGN.md, house style 3). Rows are checked in order; the first match wins. Figures
// behind the thresholds: reports/collectives_shm.md.
#include <cstdint>
#include <string_view>

namespace distlab::comm::shm {

enum class AllreduceAlgo : uint8_t { kDirect, kRsAg, kSingleCopy };
std::string_view allreduceAlgoName(AllreduceAlgo algo);

struct AllreduceRule {
  int minWorldSize;   // rule applies when size >= minWorldSize
  uint64_t minBytes;  // ... and bytes >= minBytes
  AllreduceAlgo algo;
};

// Exposed for tests and the benchmark report.
const AllreduceRule* allreduceRules(int* count);
AllreduceAlgo selectAllreduce(uint64_t bytes, int worldSize);

// The smallest operation that takes the single-copy path when the group may
// (Note [shm single copy]; option shm.single_copy_min_bytes overrides it).
// Below it the slots win: one sync per slot-sized step against the single-copy
// path's two or three syncs and a system call per peer.
uint64_t defaultSingleCopyMinBytes();

}  // namespace distlab::comm::shm
