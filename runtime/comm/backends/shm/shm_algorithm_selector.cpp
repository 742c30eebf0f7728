#include "runtime/comm/backends/shm/shm_algorithm_selector.hpp"

#include <iterator>

namespace distlab::comm::shm {
namespace {

// Direct reads size() x the chunk per rank; RS+AG moves ~4x the chunk (2 reads,
// 2 writes) whatever the world size but takes two steps per chunk. Direct wins
// for small messages (one step: latency); RS+AG for large ones.
constexpr AllreduceRule kAllreduceRules[] = {
    {2, 256 * 1024, AllreduceAlgo::kRsAg},
    {1, 0, AllreduceAlgo::kDirect},
};

}  // namespace

std::string_view allreduceAlgoName(AllreduceAlgo algo) {
  switch (algo) {
    case AllreduceAlgo::kDirect: return "direct";
    case AllreduceAlgo::kRsAg: return "reduce_scatter+all_gather";
    case AllreduceAlgo::kSingleCopy: return "single_copy";
  }
  return "?";
}

uint64_t defaultSingleCopyMinBytes() { return 64 * 1024; }

const AllreduceRule* allreduceRules(int* count) {
  *count = static_cast<int>(std::size(kAllreduceRules));
  return kAllreduceRules;
}

AllreduceAlgo selectAllreduce(uint64_t bytes, int worldSize) {
  for (const auto& rule : kAllreduceRules) {
    if (worldSize >= rule.minWorldSize && bytes >= rule.minBytes) return rule.algo;
  }
  return AllreduceAlgo::kDirect;
}

}  // namespace distlab::comm::shm
