// Scatter: the root's slot is split in size() parts of P bytes; step k carries
// bytes [k*P, (k+1)*P) of ins[q] in part q; after the sync rank q copies its part.
// The root's own part goes from ins[root] to its output directly (Note [Own part
// from the input] in shm_algorithms.hpp).
#include <algorithm>
#include <cstring>

#include "runtime/comm/backends/shm/shm_algorithms.hpp"

namespace distlab::comm::shm {

void scatterChunked(ShmOp& op, std::span<const uint8_t* const> ins, uint8_t* out,
                    uint64_t bytes, int root) {
  const uint64_t part = op.partBytes();
  op.readsFrom(static_cast<uint64_t>(op.rank()) * part);
  uint64_t off = 0;
  do {
    const uint64_t n = std::min(part, bytes - off);
    const bool isRoot = op.rank() == root;
    if (isRoot && n > 0) {
      uint8_t* slot = op.writeSlot();
      for (int q = 0; q < op.size(); ++q) {
        if (q != root) std::memcpy(slot + q * part, ins[q] + off, n);
      }
    }
    op.sync();
    if (n > 0 && !isRoot) std::memcpy(out + off, op.readSlot(root) + op.rank() * part, n);
    if (n > 0 && isRoot && out != ins[root]) std::memmove(out + off, ins[root] + off, n);
    off += n;
  } while (off < bytes);
}

}  // namespace distlab::comm::shm
