#include "runtime/tensor/device.hpp"

#include <cstdlib>

#include "runtime/core/errors.hpp"

namespace distlab {

const char* deviceTypeName(DeviceType type) {
  switch (type) {
    case DeviceType::kCPU: return "cpu";
    case DeviceType::kCUDA: return "cuda";
    case DeviceType::kMeta: return "meta";
  }
  return "?";
}

std::string Device::str() const {
  return isCuda() ? "cuda:" + std::to_string(index) : std::string(deviceTypeName(type));
}

Device parseDevice(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "meta") return Device::meta();
  if (text == "cuda") return Device::cuda(0);
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5) {
    const std::string digits = text.substr(5);
    if (digits.find_first_not_of("0123456789") == std::string::npos && digits.size() < 6) {
      return Device::cuda(std::atoi(digits.c_str()));
    }
  }
  throw ValueError("unknown device '" + text + "'; expected cpu, cuda, cuda:N or meta");
}

}  // namespace distlab
