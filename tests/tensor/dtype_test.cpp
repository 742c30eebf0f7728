#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/tensor/dtype.hpp"
#include "tests/tensor/test_util.hpp"

#include <rapidcheck/gtest.h>

namespace distlab {
namespace {

float fromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t toBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(DType, SizesAndNames) {
  EXPECT_EQ(elementSize(DType::kFloat32), 4u);
  EXPECT_EQ(elementSize(DType::kFloat64), 8u);
  EXPECT_EQ(elementSize(DType::kFloat16), 2u);
  EXPECT_EQ(elementSize(DType::kBFloat16), 2u);
  EXPECT_EQ(elementSize(DType::kInt8), 1u);
  EXPECT_EQ(elementSize(DType::kInt64), 8u);
  EXPECT_EQ(elementSize(DType::kBool), 1u);
  EXPECT_EQ(dtypeName(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(parseDType("float16"), DType::kFloat16);
  EXPECT_EQ(parseDType("double"), DType::kFloat64);
  EXPECT_EQ(parseDType("long"), DType::kInt64);
  EXPECT_THROW_MSG(parseDType("float8"), ValueError, "unknown dtype 'float8'; valid dtypes: float32");
  EXPECT_TRUE(isFloatingPoint(DType::kBFloat16));
  EXPECT_FALSE(isFloatingPoint(DType::kInt32));
  EXPECT_TRUE(isIntegral(DType::kUInt8));
  EXPECT_FALSE(isIntegral(DType::kBool));
}

TEST(DType, HalfExactBitPatterns) {
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(-2.0f).bits, 0xc000);
  EXPECT_EQ(Half(65504.0f).bits, 0x7bff);                  // max finite
  EXPECT_EQ(Half(65519.99f).bits, 0x7bff);                 // below the halfway point
  EXPECT_EQ(Half(65520.0f).bits, 0x7c00);                  // tie rounds to even -> inf
  EXPECT_EQ(Half(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_EQ(Half(-std::numeric_limits<float>::infinity()).bits, 0xfc00);
  EXPECT_EQ(Half(0.0f).bits, 0x0000);
  EXPECT_EQ(Half(-0.0f).bits, 0x8000);
  // 1 + 2^-11 is exactly halfway between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(Half(1.0f + 0x1.0p-11f).bits, 0x3c00);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even): rounds up.
  EXPECT_EQ(Half(1.0f + 3 * 0x1.0p-11f).bits, 0x3c02);
  // Just above the tie rounds up.
  EXPECT_EQ(Half(fromBits(toBits(1.0f + 0x1.0p-11f) + 1)).bits, 0x3c01);
  // Subnormals: 2^-24 is the smallest, 2^-25 ties to even (0), 3*2^-25 ties up to 2*2^-24.
  EXPECT_EQ(Half(0x1.0p-24f).bits, 0x0001);
  EXPECT_EQ(Half(0x1.0p-25f).bits, 0x0000);
  EXPECT_EQ(Half(3 * 0x1.0p-25f).bits, 0x0002);
  EXPECT_EQ(Half(0x1.0p-14f - 0x1.0p-24f).bits, 0x03ff);  // largest subnormal
  EXPECT_EQ(Half(0x1.0p-14f).bits, 0x0400);               // smallest normal
  EXPECT_EQ(Half(-0x1.0p-24f).bits, 0x8001);
  const Half nan(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan.bits & 0x7c00, 0x7c00);
  EXPECT_NE(nan.bits & 0x03ff, 0);
  EXPECT_TRUE(std::isnan(static_cast<float>(nan)));
}

TEST(DType, HalfToFloat) {
  Half h;
  h.bits = 0x0001;
  EXPECT_EQ(static_cast<float>(h), 0x1.0p-24f);
  h.bits = 0x03ff;
  EXPECT_EQ(static_cast<float>(h), 1023 * 0x1.0p-24f);
  h.bits = 0x7bff;
  EXPECT_EQ(static_cast<float>(h), 65504.0f);
  h.bits = 0xfc00;
  EXPECT_EQ(static_cast<float>(h), -std::numeric_limits<float>::infinity());
  h.bits = 0x8000;
  EXPECT_TRUE(std::signbit(static_cast<float>(h)));
  h.bits = 0x3555;  // 0.333251953125
  EXPECT_EQ(static_cast<float>(h), 0.333251953125f);
}

TEST(DType, BFloat16ExactBitPatterns) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(-1.0f).bits, 0xbf80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(BFloat16(1.0f + 0x1.0p-8f).bits, 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even): rounds up.
  EXPECT_EQ(BFloat16(1.0f + 3 * 0x1.0p-8f).bits, 0x3f82);
  EXPECT_EQ(BFloat16(fromBits(0x3f808001)).bits, 0x3f81);
  EXPECT_EQ(BFloat16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  EXPECT_EQ(BFloat16(std::numeric_limits<float>::max()).bits, 0x7f80);  // rounds to inf
  const BFloat16 nan(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(static_cast<float>(nan)));
  const BFloat16 sigNan(fromBits(0x7f800001));  // payload only in the dropped bits
  EXPECT_TRUE(std::isnan(static_cast<float>(sigNan)));
  EXPECT_EQ(static_cast<float>(BFloat16(3.0f)), 3.0f);
}

TEST(DType, Promotion) {
  EXPECT_EQ(promoteTypes(DType::kFloat32, DType::kFloat64), DType::kFloat64);
  EXPECT_EQ(promoteTypes(DType::kFloat16, DType::kBFloat16), DType::kFloat32);
  EXPECT_EQ(promoteTypes(DType::kFloat16, DType::kFloat32), DType::kFloat32);
  EXPECT_EQ(promoteTypes(DType::kInt64, DType::kFloat16), DType::kFloat16);
  EXPECT_EQ(promoteTypes(DType::kInt32, DType::kInt64), DType::kInt64);
  EXPECT_EQ(promoteTypes(DType::kInt8, DType::kUInt8), DType::kInt32);  // no int16 in distlab
  EXPECT_EQ(promoteTypes(DType::kBool, DType::kInt8), DType::kInt8);
  EXPECT_EQ(promoteTypes(DType::kBool, DType::kBool), DType::kBool);
}

// Every half value survives half -> float -> half (NaNs stay NaN).
RC_GTEST_PROP(DTypeProp, HalfRoundTrip, (uint16_t bits)) {
  Half h;
  h.bits = bits;
  const float f = h;
  const Half back(f);
  if (std::isnan(f)) {
    RC_ASSERT(std::isnan(static_cast<float>(back)));
  } else {
    RC_ASSERT(back.bits == bits);
  }
}

RC_GTEST_PROP(DTypeProp, BFloat16RoundTrip, (uint16_t bits)) {
  BFloat16 b;
  b.bits = bits;
  const float f = b;
  const BFloat16 back(f);
  if (std::isnan(f)) {
    RC_ASSERT(std::isnan(static_cast<float>(back)));
  } else {
    RC_ASSERT(back.bits == bits);
  }
}

// float -> half picks the nearest half (ties to the even pattern).
RC_GTEST_PROP(DTypeProp, HalfIsNearest, (uint32_t raw)) {
  const float f = fromBits(raw);
  RC_PRE(std::isfinite(f) && std::fabs(f) < 65504.0f);
  const Half h(f);
  const double chosen = static_cast<float>(h);
  Half up, down;
  up.bits = static_cast<uint16_t>(h.bits + 1);
  down.bits = static_cast<uint16_t>(h.bits - 1);
  const double err = std::fabs(chosen - f);
  if ((h.bits & 0x7fff) != 0x7bff) RC_ASSERT(err <= std::fabs(static_cast<float>(up) - double(f)));
  if ((h.bits & 0x7fff) != 0) RC_ASSERT(err <= std::fabs(static_cast<float>(down) - double(f)));
}

}  // namespace
}  // namespace distlab
