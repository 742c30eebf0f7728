// Direct reduce: as the direct allreduce, but only the root reduces:
//   per chunk: stage into my slot; sync; root reduces all slots into its tensor.
// Up to kDescSmallDataBytes, the one chunk travels in the descriptor heads
// instead (Note [Small data in the descriptor line]).
#include <algorithm>
#include <array>

#include "runtime/comm/backends/shm/shm_algorithms.hpp"
#include "runtime/comm/reduce_kernels.hpp"

namespace distlab::comm::shm {

void reduceDirect(ShmOp& op, uint8_t* data, uint64_t count, DType dtype, ReduceOp redop,
                  int root) {
  const uint64_t es = elementSize(dtype);
  const uint64_t chunk = op.slotBytes() / es;
  // No allocation per op, and not zeroed (512 bytes, ~100 instructions a step):
  // the entries below size() are set before each use.
  std::array<const void*, kMaxWorldSize> srcs;
  op.carrySmallData(count * es);
  uint64_t off = 0;
  do {
    const uint64_t n = std::min(chunk, count - off);
    stageInput(op.writeSlot(), data + off * es, n, dtype, redop);
    op.sync();
    if (op.rank() == root) {
      for (int r = 0; r < op.size(); ++r) srcs[r] = op.readSlot(r);
      reduceN(data + off * es, srcs.data(), op.size(), n, dtype, redop);
    }
    off += n;
  } while (off < count);
}

}  // namespace distlab::comm::shm
