// PhiloxGenerator on the CPU: Philox4x32-10 known answers (Random123's
// kat_vectors), fills replayable from (seed, offset), offsets advancing, and
// the distributions' moments. CPU == GPU bitwise is tests/gpu/philox_gpu_test.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/core/errors.hpp"
#include "runtime/tensor/philox.hpp"

namespace distlab {
namespace {

void expectBlock(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key,
                 std::array<uint32_t, 4> want) {
  uint32_t out[4];
  philox::philox4x32_10(ctr.data(), key.data(), out);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], want[i]) << "word " << i;
}

TEST(Philox, KnownAnswersOfPhilox4x32_10) {
  expectBlock({0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  expectBlock({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
              {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  expectBlock({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
              {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST(Philox, FillsReplayFromSeedAndOffset) {
  PhiloxGenerator gen(42);
  Tensor a = randPhilox({1000}, gen);
  Tensor b = randPhilox({1000}, gen);
  EXPECT_EQ(gen.offset(), 2u);
  EXPECT_FALSE(a.equal(b));  // a new offset per fill
  PhiloxGenerator replay(42);
  EXPECT_TRUE(randPhilox({1000}, replay).equal(a));
  replay.setOffset(1);
  EXPECT_TRUE(randPhilox({1000}, replay).equal(b));
  // Element i does not depend on the fill's size.
  PhiloxGenerator small(42);
  EXPECT_TRUE(randPhilox({10}, small).equal(a.slice(0, 0, 10)));
  EXPECT_THROW(randPhilox({2}, gen, {DType::kFloat64}), ValueError);
}

TEST(Philox, UniformAndNormalMoments) {
  PhiloxGenerator gen(7);
  const int64_t n = 1 << 18;
  const std::vector<float> u = randPhilox({n}, gen).toVector<float>();
  const std::vector<float> z = randnPhilox({n}, gen).toVector<float>();
  double su = 0, sz = 0, sz2 = 0, sz4 = 0;
  float umin = 1, umax = 0;
  for (int64_t i = 0; i < n; ++i) {
    su += u[i];
    umin = std::min(umin, u[i]);
    umax = std::max(umax, u[i]);
    ASSERT_TRUE(std::isfinite(z[i]));
    sz += z[i];
    sz2 += double(z[i]) * z[i];
    sz4 += std::pow(double(z[i]), 4);
  }
  EXPECT_GE(umin, 0.0f);
  EXPECT_LT(umax, 1.0f);
  EXPECT_NEAR(su / n, 0.5, 0.005);
  EXPECT_NEAR(sz / n, 0.0, 0.01);
  EXPECT_NEAR(sz2 / n, 1.0, 0.01);
  EXPECT_NEAR(sz4 / n, 3.0, 0.05);  // normal kurtosis
}

}  // namespace
}  // namespace distlab
