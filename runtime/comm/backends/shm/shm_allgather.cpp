// Allgather with per-rank sizes (also gather and all_gather_into_tensor):
//   step k: every rank copies bytes [k*S, (k+1)*S) of its input into its slot;
//   sync; each receiving rank copies rank q's piece into outs[q], and its own
//   from its input (Note [Own part from the input] in shm_algorithms.hpp).
// The number of steps follows the largest input (from the descriptors, known
// after the first step), so every rank takes the same steps.
#include <algorithm>
#include <cstring>

#include "runtime/comm/backends/shm/shm_algorithms.hpp"

namespace distlab::comm::shm {

void allgatherChunked(ShmOp& op, const uint8_t* in, uint64_t inBytes,
                      std::span<uint8_t* const> outs, bool peersReadMine) {
  const uint64_t chunk = op.slotBytes();
  const int me = op.rank();
  uint64_t steps = 1;
  for (uint64_t k = 0; k < steps; ++k) {
    const uint64_t off = k * chunk;
    if (peersReadMine && off < inBytes) {
      std::memcpy(op.writeSlot(), in + off, std::min(chunk, inBytes - off));
    }
    op.sync();
    if (k == 0) {
      uint64_t maxBytes = 0;
      for (int q = 0; q < op.size(); ++q) maxBytes = std::max(maxBytes, op.desc(q).bytes);
      steps = std::max<uint64_t>(1, (maxBytes + chunk - 1) / chunk);
    }
    if (outs.empty()) continue;
    // Its own piece first, before any output of this step is written.
    if (off < inBytes && outs[me] != in) {
      std::memmove(outs[me] + off, in + off, std::min(chunk, inBytes - off));
    }
    for (int q = 0; q < op.size(); ++q) {
      const uint64_t qBytes = op.desc(q).bytes;
      if (q == me || off >= qBytes) continue;
      std::memcpy(outs[q] + off, op.readSlot(q), std::min(chunk, qBytes - off));
    }
  }
}

}  // namespace distlab::comm::shm
