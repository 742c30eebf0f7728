// Allgather with per-rank sizes (also gather and all_gather_into_tensor):
//   step k: every rank copies bytes [k*S, (k+1)*S) of its input into its slot;
//   sync; each receiving rank copies rank q's piece into outs[q].
// The number of steps follows the largest input (from the descriptors, known
// after the first step), so every rank takes the same steps.
#include <algorithm>
#include <cstring>

#include "runtime/comm/backends/shm/shm_algorithms.hpp"

namespace distlab::comm::shm {

void allgatherChunked(ShmOp& op, const uint8_t* in, uint64_t inBytes,
                      std::span<uint8_t* const> outs) {
  const uint64_t chunk = op.slotBytes();
  uint64_t steps = 1;
  for (uint64_t k = 0; k < steps; ++k) {
    const uint64_t off = k * chunk;
    if (off < inBytes) std::memcpy(op.writeSlot(), in + off, std::min(chunk, inBytes - off));
    op.sync();
    if (k == 0) {
      uint64_t maxBytes = 0;
      for (int q = 0; q < op.size(); ++q) maxBytes = std::max(maxBytes, op.desc(q).bytes);
      steps = std::max<uint64_t>(1, (maxBytes + chunk - 1) / chunk);
    }
    if (outs.empty()) continue;
    for (int q = 0; q < op.size(); ++q) {
      const uint64_t qBytes = op.desc(q).bytes;
      if (off >= qBytes) continue;
      std::memcpy(outs[q] + off, op.readSlot(q), std::min(chunk, qBytes - off));
    }
  }
}

}  // namespace distlab::comm::shm
