// Direct reduce: as the direct allreduce, but only the root reduces:
//   per chunk: the leaves stage into their slots; sync; the root reduces its
//   own chunk, read where it is (Note [Own part from the input] in
//   shm_algorithms.hpp), and the leaves' slots into its tensor.
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
  const bool ownFromInput = ownPartFromInput(redop);
  const bool stages = op.rank() != root || !ownFromInput;
  // No allocation per op, and not zeroed: the entries below size() are set
  // before each use.
  std::array<const void*, kMaxWorldSize> srcs;
  op.carrySmallData(count * es);
  uint64_t off = 0;
  do {
    const uint64_t n = std::min(chunk, count - off);
    uint8_t* mine = data + off * es;
    if (stages) stageInput(op.writeSlot(), mine, n, dtype, redop);
    op.sync();
    if (op.rank() == root) {
      for (int r = 0; r < op.size(); ++r) srcs[r] = op.readSlot(r);
      if (ownFromInput) srcs[root] = mine;
      reduceN(mine, srcs.data(), op.size(), n, dtype, redop);
    }
    off += n;
  } while (off < count);
}

}  // namespace distlab::comm::shm
