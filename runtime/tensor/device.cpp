#include "runtime/tensor/device.hpp"

#include <cstdlib>

#include "runtime/core/errors.hpp"

namespace distlab {

std::string Device::str() const {
  return isCpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

Device parseDevice(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5) {
    const std::string digits = text.substr(5);
    if (digits.find_first_not_of("0123456789") == std::string::npos && digits.size() < 6) {
      return Device::cuda(std::atoi(digits.c_str()));
    }
  }
  throw ValueError("unknown device '" + text + "'; expected cpu, cuda or cuda:N");
}

}  // namespace distlab
