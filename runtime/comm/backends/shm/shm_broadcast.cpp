// Broadcast: per chunk of up to slotBytes, the root copies the chunk into its
// slot; sync; every other rank copies it out. Up to kDescSmallDataBytes, the
// one chunk travels in the root's descriptor head instead (Note [Small data in
// the descriptor line]).
#include <algorithm>
#include <cstring>

#include "runtime/comm/backends/shm/shm_algorithms.hpp"

namespace distlab::comm::shm {

void broadcastChunked(ShmOp& op, uint8_t* data, uint64_t bytes, int root) {
  const uint64_t chunk = op.slotBytes();
  op.carrySmallData(bytes);
  uint64_t off = 0;
  do {
    const uint64_t n = std::min(chunk, bytes - off);
    if (op.rank() == root && n > 0) std::memcpy(op.writeSlot(), data + off, n);
    op.sync();
    if (op.rank() != root && n > 0) std::memcpy(data + off, op.readSlot(root), n);
    off += n;
  } while (off < bytes);
}

}  // namespace distlab::comm::shm
