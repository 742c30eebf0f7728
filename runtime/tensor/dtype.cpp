#include "runtime/tensor/dtype.hpp"

#include <cstring>
#include <string>

#include "runtime/core/errors.hpp"

namespace distlab {
namespace {

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Note [Half rounding]
// float -> half rounds to nearest even. Normal results add the rounding bias
// (0xfff plus the lowest kept mantissa bit) before truncating 13 bits; a carry
// out of the mantissa correctly bumps the exponent. Subnormal results reuse the
// FPU: adding 0.5f puts the value in a binade whose ulp is 2^-24 (the half
// subnormal step), so the hardware addition rounds to even for us.
uint16_t halfFromFloat(float value) {
  uint32_t f = floatBits(value);
  const uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
  f &= 0x7fffffffu;
  if (f >= 0x7f800000u) {  // inf or NaN
    return sign | (f > 0x7f800000u ? 0x7e00u : 0x7c00u);
  }
  if (f >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to inf
  if (f < 0x38800000u) {                         // below 2^-14: subnormal or zero
    const float shifted = bitsToFloat(f) + 0.5f;
    return sign | static_cast<uint16_t>(floatBits(shifted) - 0x3f000000u);
  }
  const uint32_t odd = (f >> 13) & 1u;
  f += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;
  return sign | static_cast<uint16_t>(f >> 13);
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return bitsToFloat(floatBits(magnitude) | sign);
  }
  if (exponent == 31) return bitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  return bitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t bfloat16FromFloat(float value) {
  const uint32_t f = floatBits(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) {  // NaN stays a (quiet) NaN
    return static_cast<uint16_t>(((f >> 16) & 0x8000u) | 0x7fc0u);
  }
  const uint32_t bias = 0x7fffu + ((f >> 16) & 1u);
  return static_cast<uint16_t>((f + bias) >> 16);
}

struct DTypeInfo {
  std::string_view name;
  size_t size;
};

constexpr DTypeInfo kInfo[kNumDTypes] = {
    {"float32", 4}, {"float64", 8}, {"float16", 2}, {"bfloat16", 2}, {"int8", 1},
    {"uint8", 1},   {"int32", 4},   {"int64", 8},   {"bool", 1},
};

}  // namespace

Half::Half(float value) : bits(halfFromFloat(value)) {}
Half::operator float() const { return halfToFloat(bits); }
BFloat16::BFloat16(float value) : bits(bfloat16FromFloat(value)) {}
BFloat16::operator float() const { return bitsToFloat(static_cast<uint32_t>(bits) << 16); }

size_t elementSize(DType dtype) { return kInfo[static_cast<int>(dtype)].size; }

std::string_view dtypeName(DType dtype) { return kInfo[static_cast<int>(dtype)].name; }

DType parseDType(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kInfo[i].name == name) return static_cast<DType>(i);
  }
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kFloat16;
  if (name == "long") return DType::kInt64;
  if (name == "int") return DType::kInt32;
  std::string valid;
  for (const auto& info : kInfo) {
    valid += valid.empty() ? "" : ", ";
    valid += info.name;
  }
  throw ValueError("unknown dtype '" + std::string(name) + "'; valid dtypes: " + valid +
                   " (aliases: float, double, half, long, int)");
}

bool isFloatingPoint(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}

bool isIntegral(DType dtype) {
  return dtype == DType::kInt8 || dtype == DType::kUInt8 || dtype == DType::kInt32 ||
         dtype == DType::kInt64;
}

}  // namespace distlab
