// Reduce-scatter: every slot is split in size() parts of P bytes; step k: each
// rank stages piece k of ins[q] in part q (its own part stays in its input);
// sync; rank q reduces part q of all slots (rank order) into its output
// piece. When all of a rank's parts fit kDescSmallDataBytes, they travel side
// by side in the descriptor heads (Note [Small data in the descriptor line]):
// one step, each part `count` elements.
#include <algorithm>
#include <array>

#include "runtime/comm/backends/shm/shm_algorithms.hpp"
#include "runtime/comm/reduce_kernels.hpp"

namespace distlab::comm::shm {

void reduceScatterParts(ShmOp& op, std::span<const uint8_t* const> ins, uint8_t* out,
                        uint64_t count, DType dtype, ReduceOp redop) {
  const uint64_t es = elementSize(dtype);
  const bool inHead = op.carrySmallData(count * es * static_cast<uint64_t>(op.size()));
  const uint64_t part = inHead ? count * es : op.partBytes();
  const uint64_t chunk = part / es;
  // No allocation per op, and not zeroed (512 bytes, ~100 instructions a step):
  // the entries below size() are set before each use.
  std::array<const void*, kMaxWorldSize> srcs;
  const int me = op.rank();
  // Note [Own part from the input] in shm_algorithms.hpp.
  const bool ownFromInput = ownPartFromInput(redop);
  op.readsFrom(static_cast<uint64_t>(me) * part);
  uint64_t off = 0;
  do {
    const uint64_t n = std::min(chunk, count - off);
    uint8_t* slot = op.writeSlot();
    for (int q = 0; q < op.size(); ++q) {
      if (q == me && ownFromInput) continue;
      stageInput(slot + q * part, ins[q] + off * es, n, dtype, redop);
    }
    op.sync();
    for (int r = 0; r < op.size(); ++r) srcs[r] = op.readSlot(r) + me * part;
    if (ownFromInput) srcs[me] = ins[me] + off * es;
    reduceN(out + off * es, srcs.data(), op.size(), n, dtype, redop);
    off += n;
  } while (off < count);
}

}  // namespace distlab::comm::shm
