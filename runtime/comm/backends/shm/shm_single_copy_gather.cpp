// Single-copy gathers (Note [shm single copy]): allgather, gather and
// broadcast are all "read rank q's buffer into outs[q]":
//   1. sync (descriptors, sizes and buffer addresses checked);
//   2. for each q with an output: read desc(q).bytes from rank q's buffer
//      (my own input: a local copy, none when the output is the input);
//   3. sync (nobody reads my buffer any more).
// One copy per byte received, whatever the size: no slot-sized steps.
#include <cstring>

#include "runtime/comm/backends/shm/shm_algorithms.hpp"

namespace distlab::comm::shm {

void gatherSingleCopy(ShmOp& op, const uint8_t* in, std::span<uint8_t* const> outs) {
  op.sync();
  for (int q = 0; q < static_cast<int>(outs.size()); ++q) {
    const uint64_t bytes = op.desc(q).bytes;
    if (outs[q] == nullptr || bytes == 0) continue;
    op.throwIfCancelled();
    if (q != op.rank()) {
      op.readPeer(q, 0, outs[q], bytes);
    } else if (outs[q] != in) {
      std::memmove(outs[q], in, bytes);  // FSDP's in-place all-gather passes a view of the output
    }
  }
  op.confirmPeersAlive();
  op.sync();
}

}  // namespace distlab::comm::shm
