// Reduce-scatter + all-gather allreduce (see shm_algorithms.hpp):
//   for each chunk of up to slotBytes (split in size() parts, part q owned by rank q):
//     1. stage the parts other ranks reduce into my slot (my own part stays in
//        my input: one copy less; PREMUL_SUM stages it too, pre-scaled); sync;
//     2. reduce part r of every rank (rank order; mine from my input) into my
//        output and, in the same pass, into part r of my NEXT slot (free: the
//        sync proved everyone left the step before);
//     3. sync; copy every other rank's part q from its slot into my output.
// Each part is reduced by one rank only, so results are identical everywhere.
//
// Note [shm large messages]
// The user's tensors live in each rank's private memory, so every byte that
// crosses ranks goes through a slot. Per chunk of N bytes at world n, a rank
// reads (n-1)/n N and writes it to its slot (stage), reads n parts of N/n and
// writes its reduced part to its output and its slot in one pass, and copies
// the (n-1)/n N reduced by the others into its output:
//   read  N (1 + 2(n-1)/n),  write 2N      (world 2: 2N + 2N = 2x a memcpy of N).
// Each rank must read its input and write its output (N + N), and what it
// sends and receives must be written to and read from shared memory once
// each, so this is the floor for private buffers; reading the peers' memory
// in place (Note [shm single copy]) moves fewer bytes but through the
// kernel's slower copy, and is taken only where it measured faster. bench
// collectives reports how close a run comes to the floor.
#include <algorithm>
#include <array>
#include <cstring>

#include "runtime/comm/backends/shm/shm_algorithms.hpp"
#include "runtime/comm/reduce_kernels.hpp"

namespace distlab::comm::shm {

void allreduceRsAg(ShmOp& op, uint8_t* data, uint64_t count, DType dtype, ReduceOp redop) {
  const uint64_t es = elementSize(dtype);
  const int size = op.size();
  const int me = op.rank();
  const uint64_t chunk = op.slotBytes() / es;
  // No allocation per op, and not zeroed (512 bytes, ~100 instructions a step):
  // the entries below size() are set before each use.
  std::array<const void*, kMaxWorldSize> srcs;
  uint64_t off = 0;
  do {
    const uint64_t n = std::min(chunk, count - off);
    const uint64_t per = (n + size - 1) / size;  // elements per part (last may be short)
    auto partBegin = [&](int q) { return std::min<uint64_t>(q * per, n); };
    auto partLen = [&](int q) { return std::min<uint64_t>((q + 1) * per, n) - partBegin(q); };
    const bool ownFromInput = ownPartFromInput(redop);
    uint8_t* slot = op.writeSlot();
    for (int q = 0; q < size; ++q) {
      if (q == me && ownFromInput) continue;
      const uint64_t bq = partBegin(q) * es;
      stageInput(slot + bq, data + off * es + bq, partLen(q), dtype, redop);
    }
    op.sync();
    const uint64_t b = partBegin(me) * es;
    for (int r = 0; r < size; ++r) srcs[r] = op.readSlot(r) + b;
    if (ownFromInput) srcs[me] = data + off * es + b;
    reduceNAndCopy(data + off * es + b, op.writeSlot() + b, srcs.data(), size, partLen(me), dtype,
                   redop);
    op.sync();
    for (int q = 0; q < size; ++q) {
      if (q == me || partLen(q) == 0) continue;
      const uint64_t bq = partBegin(q) * es;
      std::memcpy(data + off * es + bq, op.readSlot(q) + bq, partLen(q) * es);
    }
    off += n;
  } while (off < count);
}

}  // namespace distlab::comm::shm
