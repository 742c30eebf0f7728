#pragma once
// Element types. fp16/bf16 are stored as 16-bit patterns; conversions from
// float round to nearest even (NaN stays NaN), as PyTorch's do.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace distlab {

enum class DType : uint8_t {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
  kBool,
};
inline constexpr int kNumDTypes = 9;

size_t elementSize(DType dtype);
// PyTorch spelling: "float32", "float64", "float16", "bfloat16", "int8", ...
std::string_view dtypeName(DType dtype);
// Parses the PyTorch spelling (also "float", "double", "half", "long", "int");
// throws ValueError listing the valid names.
DType parseDType(std::string_view name);
bool isFloatingPoint(DType dtype);  // float32/64, float16, bfloat16
bool isIntegral(DType dtype);       // int8/uint8/int32/int64 (bool excluded)

// IEEE half. Conversion through float; round to nearest even.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float value);  // NOLINT(google-explicit-constructor): numeric conversion
  operator float() const;  // NOLINT(google-explicit-constructor)
};

// bfloat16: the top 16 bits of a float32. Conversion rounds to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float value);  // NOLINT(google-explicit-constructor)
  operator float() const;  // NOLINT(google-explicit-constructor)
};

// Maps a C++ type to its DType: dtypeOf<float>() == DType::kFloat32.
template <typename T>
constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<float>() { return DType::kFloat32; }
template <> constexpr DType dtypeOf<double>() { return DType::kFloat64; }
template <> constexpr DType dtypeOf<Half>() { return DType::kFloat16; }
template <> constexpr DType dtypeOf<BFloat16>() { return DType::kBFloat16; }
template <> constexpr DType dtypeOf<int8_t>() { return DType::kInt8; }
template <> constexpr DType dtypeOf<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType dtypeOf<int32_t>() { return DType::kInt32; }
template <> constexpr DType dtypeOf<int64_t>() { return DType::kInt64; }
template <> constexpr DType dtypeOf<bool>() { return DType::kBool; }

// Calls fn(T{}) with the C++ type of `dtype` (a tag value), e.g.
//   dispatchDType(t.dtype(), [&](auto tag) { using T = decltype(tag); ... });
template <typename Fn>
decltype(auto) dispatchDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: return fn(float{});
    case DType::kFloat64: return fn(double{});
    case DType::kFloat16: return fn(Half{});
    case DType::kBFloat16: return fn(BFloat16{});
    case DType::kInt8: return fn(int8_t{});
    case DType::kUInt8: return fn(uint8_t{});
    case DType::kInt32: return fn(int32_t{});
    case DType::kInt64: return fn(int64_t{});
    case DType::kBool: return fn(bool{});
  }
  return fn(float{});
}

}  // namespace distlab
