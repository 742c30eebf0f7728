#include "runtime/tensor/generator.hpp"

#include <cmath>

#include "runtime/core/errors.hpp"

namespace distlab {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

void Generator::manualSeed(uint64_t seed) {
  seed_ = seed;
  uint64_t x = seed;
  for (auto& word : state_) word = splitmix64(x);
  hasSpareNormal_ = false;
  spareNormal_ = 0.0;
}

uint64_t Generator::nextU64() {
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double Generator::uniform() {
  // The top 53 bits give every double in [0, 1) on the 2^-53 grid.
  return static_cast<double>(nextU64() >> 11) * 0x1.0p-53;
}

double Generator::normal() {
  if (hasSpareNormal_) {
    hasSpareNormal_ = false;
    return spareNormal_;
  }
  // Box-Muller; 1 - uniform() lies in (0, 1], so the log is finite.
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * M_PI * u2;
  spareNormal_ = radius * std::sin(angle);
  hasSpareNormal_ = true;
  return radius * std::cos(angle);
}

int64_t Generator::randint(int64_t low, int64_t high) {
  if (low >= high) {
    throw ValueError("Generator::randint: empty range [" + std::to_string(low) + ", " +
                     std::to_string(high) + "); need low < high");
  }
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  // Rejection sampling: drop the incomplete top block so every value is equally likely.
  const uint64_t limit = range == 0 ? 0 : (~uint64_t{0} - range + 1) % range;
  uint64_t draw;
  do {
    draw = nextU64();
  } while (draw < limit);
  return static_cast<int64_t>(static_cast<uint64_t>(low) + draw % range);
}

}  // namespace distlab
