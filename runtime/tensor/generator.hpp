#pragma once
// A seeded random generator. Every random number in distlab comes from an
// explicit Generator (docs/DESIGN.md, "Determinism"): same seed, same numbers, on
// every platform (the distributions are implemented here, not taken from
// <random>, whose distributions differ between standard libraries).
// Not thread-safe: one generator per thread/rank.
#include <cstdint>

namespace distlab {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) { manualSeed(seed); }
  void manualSeed(uint64_t seed);
  uint64_t seed() const { return seed_; }

  uint64_t nextU64();          // uniform 64 bits
  double uniform();            // [0, 1)
  double normal();             // standard normal (Box-Muller)
  int64_t randint(int64_t low, int64_t high);  // [low, high); requires low < high

 private:
  uint64_t seed_ = 0;
  uint64_t state_[4] = {};     // xoshiro256** state
  bool hasSpareNormal_ = false;
  double spareNormal_ = 0.0;
};

}  // namespace distlab
