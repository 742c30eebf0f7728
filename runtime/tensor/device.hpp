#pragma once
// Where a tensor's storage lives. Storage allocation and kernels dispatch on
// DeviceType (Note [Device dispatch] in dispatch.hpp): CPU is always built,
// meta (shapes, dtypes and strides, no memory) is always built, CUDA registers
// its allocator and kernels when distlab is built with CUDA. An operation a
// device lacks throws "relu is not implemented for device cuda:0".
#include <cstdint>
#include <string>

namespace distlab {

// kCPU and kCUDA keep their values (process groups index backends by them).
enum class DeviceType : uint8_t { kCPU, kCUDA, kMeta };
inline constexpr int kNumDeviceTypes = 3;

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;  // CUDA ordinal; 0 for CPU and meta

  static Device cpu() { return {DeviceType::kCPU, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::kCUDA, index}; }
  static Device meta() { return {DeviceType::kMeta, 0}; }
  bool isCpu() const { return type == DeviceType::kCPU; }
  bool isCuda() const { return type == DeviceType::kCUDA; }
  bool isMeta() const { return type == DeviceType::kMeta; }
  bool operator==(const Device&) const = default;
  // "cpu", "cuda:N" or "meta"
  std::string str() const;
};

// "cpu", "cuda" or "meta" (no index).
const char* deviceTypeName(DeviceType type);

// Parses "cpu", "cuda", "cuda:N", "meta"; throws ValueError otherwise.
Device parseDevice(const std::string& text);

}  // namespace distlab
