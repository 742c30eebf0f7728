#include "runtime/dtensor/placement.hpp"

#include <algorithm>

namespace distlab::dtensor {

std::string Placement::str() const {
  return isShard() ? "Shard(" + std::to_string(dim) + ")" : "Replicate()";
}

int64_t chunkLength(int64_t size, int world) { return (size + world - 1) / world; }

ShardSpan shardSpan(int64_t size, int world, int rank) {
  const int64_t chunk = chunkLength(size, world);
  const int64_t begin = std::min(size, chunk * rank);
  const int64_t end = std::min(size, chunk * (rank + 1));
  return {begin, end - begin};
}

}  // namespace distlab::dtensor
