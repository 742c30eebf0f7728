#pragma once
// Per-rank memory accounting of one FSDP root (all its groups): current and
// peak bytes of unsharded parameters, sharded parameters and gradients
// (unsharded gradients waiting for reduction plus sharded gradients).
// Optimizer state is counted on demand (optimizerStateBytes). Updated on the
// rank's own thread at every allocation/free FSDP does; not thread-safe.
#include <algorithm>
#include <cstddef>

namespace distlab::optim {
class Optimizer;
}

namespace distlab::fsdp {

struct ByteCounter {
  size_t current = 0;
  size_t peak = 0;
  void add(size_t n) {
    current += n;
    peak = std::max(peak, current);
  }
  void sub(size_t n) { current -= std::min(current, n); }
  void set(size_t n) {
    current = n;
    peak = std::max(peak, current);
  }
};

struct MemoryStats {
  ByteCounter unshardedParams;
  ByteCounter shardedParams;
  ByteCounter gradients;
  void resetPeaks() {
    unshardedParams.peak = unshardedParams.current;
    shardedParams.peak = shardedParams.current;
    gradients.peak = gradients.current;
  }
};

// Bytes of every state buffer (momentum, exp_avg, ...) the optimizer holds.
size_t optimizerStateBytes(const optim::Optimizer& optimizer);

}  // namespace distlab::fsdp
