#pragma once
// Where a tensor's storage lives. CPU is implemented; CUDA is designed in:
// storage allocation and kernels dispatch on DeviceType, and a later issue
// fills in the CUDA allocator and kernels (operations on a CUDA tensor without
// them throw an Error naming the operation and the device).
#include <string>

namespace distlab {

enum class DeviceType : uint8_t { kCPU, kCUDA };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;  // CUDA ordinal; 0 for CPU

  static Device cpu() { return {DeviceType::kCPU, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::kCUDA, index}; }
  bool isCpu() const { return type == DeviceType::kCPU; }
  bool isCuda() const { return type == DeviceType::kCUDA; }
  bool operator==(const Device&) const = default;
  // "cpu" or "cuda:N"
  std::string str() const;
};

// Parses "cpu", "cuda", "cuda:N"; throws ValueError otherwise.
Device parseDevice(const std::string& text);

}  // namespace distlab
