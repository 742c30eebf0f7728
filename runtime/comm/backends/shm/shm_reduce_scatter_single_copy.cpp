// Single-copy reductions (Note [shm single copy]).
//
// reduceFromPeers: out = reduce over ranks r (rank order) of rank r's buffer at
// `offset`, `count` elements; mine from `mine`. Piece by piece of slotBytes
// per source (read into scratch, so the reduction reads it from cache).
//
// reduceScatterSingleCopy: block q of every rank's contiguous input (count
// elements) is reduced by rank q:
//   1. sync (descriptors and input addresses checked);
//   2. reduceFromPeers over block me into my output;
//   3. sync (nobody reads my input any more).
// The output may be a view of my own block of the input: peers read only the
// other blocks of my input.
#include <algorithm>
#include <array>

#include "runtime/comm/backends/shm/shm_algorithms.hpp"
#include "runtime/comm/reduce_kernels.hpp"

namespace distlab::comm::shm {

void reduceFromPeers(ShmOp& op, const uint8_t* mine, uint64_t offset, uint8_t* out,
                     uint64_t count, DType dtype, ReduceOp redop) {
  const uint64_t es = elementSize(dtype);
  const int size = op.size();
  const uint64_t pieceBytes = op.slotBytes();
  const uint64_t piece = std::max<uint64_t>(1, pieceBytes / es);
  // PREMUL_SUM scales every source first, each by its owner's scalar (PyTorch:
  // each rank "multiplies its input locally"; the scalars may differ), so my
  // own piece goes through scratch too.
  const bool premul = redop.kind == ReduceOp::kPremulSum;
  uint8_t* scratch = op.scratch(pieceBytes * size);
  // No allocation per op, and not zeroed (512 bytes, ~100 instructions a step):
  // the entries below size() are set before each use.
  std::array<const void*, kMaxWorldSize> srcs;
  for (uint64_t off = 0; off < count;) {
    const uint64_t n = std::min(piece, count - off);
    op.throwIfCancelled();
    for (int r = 0; r < size; ++r) {
      if (r == op.rank() && !premul) {
        srcs[r] = mine + off * es;
        continue;
      }
      uint8_t* s = scratch + r * pieceBytes;
      const uint8_t* from = s;  // a peer's piece is read into scratch first
      if (r == op.rank()) {
        from = mine + off * es;
      } else {
        op.readPeer(r, offset + off * es, s, n * es);
      }
      if (premul) premulCopy(s, from, n, dtype, op.desc(r).singleCopy.scalar);
      srcs[r] = s;
    }
    reduceN(out + off * es, srcs.data(), size, n, dtype, redop);
    off += n;
  }
  op.confirmPeersAlive();
}

void reduceScatterSingleCopy(ShmOp& op, const uint8_t* in, uint8_t* out, uint64_t count,
                             DType dtype, ReduceOp redop) {
  const uint64_t block = op.rank() * count * elementSize(dtype);  // my block in every input
  op.sync();
  reduceFromPeers(op, in + block, block, out, count, dtype, redop);
  op.sync();
}

}  // namespace distlab::comm::shm
