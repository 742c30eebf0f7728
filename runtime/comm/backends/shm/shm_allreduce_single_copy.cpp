// Single-copy allreduce (Note [shm single copy]): reduce-scatter + all-gather
// straight from the peers' buffers. Part q of the tensor (size() equal parts)
// is reduced by rank q only:
//   1. sync (every rank's descriptor and buffer address checked);
//   2. reduceFromPeers over my part, into my buffer;
//   3. sync (every part reduced); read each peer's reduced part into my buffer;
//   4. sync (nobody reads my buffer any more: the caller may have it back).
// Each part is reduced by one rank, so results are identical everywhere, and
// each element is reduced in rank order, so they equal the slot algorithms'.
// Bytes per rank for N bytes at world n: the reads of steps 2 and 3 move
// (n-1)/n N each through the kernel's copy, step 2's reduction reads N/n of
// mine and writes N/n: read N (2(n-1)/n + 1/n), write N (world 2: 1.5N read,
// N written, against 2N + 2N through the slots).
#include <algorithm>

#include "runtime/comm/backends/shm/shm_algorithms.hpp"

namespace distlab::comm::shm {

void allreduceSingleCopy(ShmOp& op, uint8_t* data, uint64_t count, DType dtype, ReduceOp redop) {
  const uint64_t es = elementSize(dtype);
  const int size = op.size();
  const int me = op.rank();
  const uint64_t per = (count + size - 1) / size;  // elements per part (the last may be short)
  auto partBegin = [&](int q) { return std::min<uint64_t>(q * per, count); };
  auto partEnd = [&](int q) { return std::min<uint64_t>((q + 1) * per, count); };
  op.sync();
  uint8_t* mine = data + partBegin(me) * es;
  reduceFromPeers(op, mine, partBegin(me) * es, mine, partEnd(me) - partBegin(me), dtype, redop);
  op.sync();
  for (int q = 0; q < size; ++q) {
    if (q == me) continue;
    op.throwIfCancelled();
    op.readPeer(q, partBegin(q) * es, data + partBegin(q) * es, (partEnd(q) - partBegin(q)) * es);
  }
  op.confirmPeersAlive();
  op.sync();
}

}  // namespace distlab::comm::shm
