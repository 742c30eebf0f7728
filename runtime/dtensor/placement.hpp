#pragma once
// Placements of a DTensor on one mesh dimension (PyTorch: Shard(d), Replicate())
// and the chunking rule of Shard(d).
//
// Note [Chunked sharding]
// Shard(d) splits dim d like torch.chunk: every rank's chunk has
// ceil(size / world) entries except the tail, so rank r holds
// [r * chunk, min(size, (r + 1) * chunk)), which is empty for trailing ranks
// when size < world * chunk - chunk (size 5 on 4 ranks: 2, 2, 1, 0). Collectives
// pad every chunk to `chunk` entries with zeros so all ranks send equal sizes.
#include <cstdint>
#include <string>

namespace distlab::dtensor {

struct Placement {
  enum class Kind { kShard, kReplicate };
  Kind kind = Kind::kReplicate;
  int64_t dim = 0;  // Shard only

  static Placement shard(int64_t dim) { return {Kind::kShard, dim}; }
  static Placement replicate() { return {Kind::kReplicate, 0}; }
  bool isShard() const { return kind == Kind::kShard; }
  bool isReplicate() const { return kind == Kind::kReplicate; }
  bool operator==(const Placement& o) const {
    return kind == o.kind && (kind == Kind::kReplicate || dim == o.dim);
  }
  bool operator!=(const Placement& o) const { return !(*this == o); }
  std::string str() const;  // "Shard(0)", "Replicate()"
};

// One rank's part of a dimension of `size` split over `world` ranks.
struct ShardSpan {
  int64_t offset = 0;
  int64_t length = 0;
};

// ceil(size / world): every chunk's padded length (0 for size 0).
int64_t chunkLength(int64_t size, int world);
// Rank `rank`'s span (Note [Chunked sharding]).
ShardSpan shardSpan(int64_t size, int world, int rank);

}  // namespace distlab::dtensor
