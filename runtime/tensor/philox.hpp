#pragma once
// PhiloxGenerator: counter-based random numbers that are the same on the CPU
// and on a CUDA device for the same seed (issue 15 item 3). The default
// Generator (generator.hpp) is unchanged; this is a generator of its own.
//
// Note [Philox on CPU and GPU]
// Element i of the n-th fill of a generator seeded with s is a pure function
// of (s, offset n, i): Philox4x32-10 (Salmon et al. 2011) with key = s and
// counter = (block index, offset). randPhilox takes 24 bits of a word as a
// float32 in [0, 1); randnPhilox uses Box-Muller on two words, with ln and cos
// written from correctly rounded IEEE operations only (philox_math.hpp), so
// the CUDA kernel and the host loop give bitwise identical float32 values.
// Each fill advances the offset by one (as PyTorch's philox offset), so two
// fills differ and a saved (seed, offset) replays a fill exactly.
#include <cstdint>

#include "runtime/tensor/tensor.hpp"

namespace distlab {

class PhiloxGenerator {
 public:
  explicit PhiloxGenerator(uint64_t seed = 0) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void setOffset(uint64_t offset) { offset_ = offset; }
  // The offset for the next fill; advances it.
  uint64_t takeOffset() { return offset_++; }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// float32 on options.device (CPU or CUDA); other dtypes: ValueError.
Tensor randPhilox(const Shape& shape, PhiloxGenerator& gen, TensorOptions options = {});
Tensor randnPhilox(const Shape& shape, PhiloxGenerator& gen, TensorOptions options = {});

namespace philox {
// The raw block (tests: Random123 known answers).
void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
}  // namespace philox

}  // namespace distlab
