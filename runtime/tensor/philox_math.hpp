#pragma once
// Philox4x32-10 and the float arithmetic of distlab's counter-based random
// numbers, written once for the host and the device (Note [Philox on CPU and
// GPU], philox.hpp). Included by philox.cpp and cuda/cuda_philox.cu only.
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define DISTLAB_HD __host__ __device__ __forceinline__
#else
#define DISTLAB_HD inline
#endif

namespace distlab::philox {

struct Block {
  uint32_t v[4];
};

// Philox4x32 with 10 rounds (Salmon et al., SC 2011; Random123's constants).
DISTLAB_HD Block philox4x32_10(Block ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * ctr.v[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * ctr.v[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = Block{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

// The 4 words of block `b` of the stream (seed, offset).
DISTLAB_HD Block streamBlock(uint64_t seed, uint64_t offset, uint64_t b) {
  return philox4x32_10(Block{{static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32),
                              static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)}},
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// [0, 1) with 24 random bits: exact in float32.
DISTLAB_HD float toUniform(uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }

// Only correctly rounded IEEE operations (+ - * / sqrt fma, exact scaling)
// below, each a*b+c written as fmaf: the same bits on any IEEE machine.
// ln(u) for u in (0, 1]: u = m * 2^e with m in [sqrt(1/2), sqrt(2)), then
// ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, series to s^11.
DISTLAB_HD float logPositive(float u) {
  int e = 0;
  float m = frexpf(u, &e);  // m in [0.5, 1), exact
  if (m < 0.70710678f) {
    m = m * 2.0f;  // exact
    e -= 1;
  }
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  float p = fmaf(s2, 1.0f / 11.0f, 1.0f / 9.0f);
  p = fmaf(s2, p, 1.0f / 7.0f);
  p = fmaf(s2, p, 1.0f / 5.0f);
  p = fmaf(s2, p, 1.0f / 3.0f);
  p = fmaf(s2, p, 1.0f);
  const float lnm = 2.0f * (s * p);
  return fmaf(static_cast<float>(e), 0.693147180559945f, lnm);
}

// cos(2 pi t) for t in [0, 1): quarter-turn reduction, then Taylor series on
// [-pi/4, pi/4] to x^12 (cos) / x^13 (sin).
DISTLAB_HD float cosTurns(float t) {
  const float q = rintf(t * 4.0f);    // 0..4, exact
  const float r = fmaf(q, -0.25f, t);  // in [-1/8, 1/8], exact (Sterbenz)
  const float x = r * 6.28318530717959f;
  const float x2 = x * x;
  float c = fmaf(x2, 1.0f / 479001600.0f, -1.0f / 3628800.0f);
  c = fmaf(x2, c, 1.0f / 40320.0f);
  c = fmaf(x2, c, -1.0f / 720.0f);
  c = fmaf(x2, c, 1.0f / 24.0f);
  c = fmaf(x2, c, -0.5f);
  c = fmaf(x2, c, 1.0f);
  float sn = fmaf(x2, 1.0f / 6227020800.0f, -1.0f / 39916800.0f);
  sn = fmaf(x2, sn, 1.0f / 362880.0f);
  sn = fmaf(x2, sn, -1.0f / 5040.0f);
  sn = fmaf(x2, sn, 1.0f / 120.0f);
  sn = fmaf(x2, sn, -1.0f / 6.0f);
  sn = fmaf(x2, sn, 1.0f);
  sn = x * sn;
  switch (static_cast<int>(q) & 3) {  // cos(x + q pi/2)
    case 0: return c;
    case 1: return -sn;
    case 2: return -c;
    default: return sn;
  }
}

// Element i of a fill: uniform takes word i%4 of block i/4; normal (Box-Muller)
// takes words 2(i%2), 2(i%2)+1 of block i/2.
DISTLAB_HD float uniformAt(uint64_t seed, uint64_t offset, uint64_t i) {
  return toUniform(streamBlock(seed, offset, i / 4).v[i % 4]);
}

DISTLAB_HD float normalAt(uint64_t seed, uint64_t offset, uint64_t i) {
  const Block b = streamBlock(seed, offset, i / 2);
  const int lane = static_cast<int>(i % 2) * 2;
  const float u1 = 1.0f - toUniform(b.v[lane]);  // (0, 1]: log is finite
  const float u2 = toUniform(b.v[lane + 1]);
  return sqrtf(-2.0f * logPositive(u1)) * cosTurns(u2);
}

}  // namespace distlab::philox
