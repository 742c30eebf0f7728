#pragma once
// The one table that picks a shm algorithm per (operation, bytes, world size)
// (house style 4). Rows are checked in order; the first match wins. Figures
// behind the thresholds: reports/collectives_shm.md.
#include <cstdint>
#include <string_view>

namespace distlab::comm::shm {

enum class AllreduceAlgo : uint8_t { kDirect, kRsAg };
std::string_view allreduceAlgoName(AllreduceAlgo algo);

struct AllreduceRule {
  int minWorldSize;   // rule applies when size >= minWorldSize
  uint64_t minBytes;  // ... and bytes >= minBytes
  AllreduceAlgo algo;
};

// Exposed for tests and the benchmark report.
const AllreduceRule* allreduceRules(int* count);
AllreduceAlgo selectAllreduce(uint64_t bytes, int worldSize);

}  // namespace distlab::comm::shm
