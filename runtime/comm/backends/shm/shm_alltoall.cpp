// All-to-all with per-pair sizes: every slot is split in size() parts of P
// bytes; step k: rank p copies bytes [k*P, (k+1)*P) of its block for q into part
// q; sync; rank q copies part q of every slot into its receive blocks. Its
// block for itself goes straight from its send buffer to its receive buffer
// (Note [Own part from the input] in shm_algorithms.hpp). Steps
// follow the largest block of any pair (descriptors carry every rank's send
// sizes, checked against the receivers' expectations by ShmOp).
#include <algorithm>
#include <cstring>

#include "runtime/comm/backends/shm/shm_algorithms.hpp"

namespace distlab::comm::shm {

void alltoallParts(ShmOp& op, std::span<const uint8_t* const> sends,
                   std::span<const uint64_t> sendBytes, std::span<uint8_t* const> recvs,
                   std::span<const uint64_t> recvBytes) {
  const uint64_t part = op.partBytes();
  const int size = op.size();
  const int me = op.rank();
  op.readsFrom(static_cast<uint64_t>(me) * part);
  uint64_t steps = 1;
  for (uint64_t k = 0; k < steps; ++k) {
    const uint64_t off = k * part;
    uint8_t* slot = op.writeSlot();
    for (int q = 0; q < size; ++q) {
      if (q != me && off < sendBytes[q]) {
        std::memcpy(slot + q * part, sends[q] + off, std::min(part, sendBytes[q] - off));
      }
    }
    op.sync();
    if (k == 0) steps = std::max<uint64_t>(1, (op.largestCount() + part - 1) / part);
    // Its own block first, before any receive block of this step is written
    // (the counts agree: checked at the first sync).
    if (off < recvBytes[me] && recvs[me] != sends[me]) {
      std::memmove(recvs[me] + off, sends[me] + off, std::min(part, recvBytes[me] - off));
    }
    for (int p = 0; p < size; ++p) {
      if (p == me || off >= recvBytes[p]) continue;
      std::memcpy(recvs[p] + off, op.readSlot(p) + me * part, std::min(part, recvBytes[p] - off));
    }
  }
}

}  // namespace distlab::comm::shm
