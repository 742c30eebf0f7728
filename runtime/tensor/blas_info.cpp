#include "runtime/tensor/blas_info.hpp"

#include <cblas.h>
#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

namespace distlab {
namespace {

// The first "model name" and the "flags" of /proc/cpuinfo.
std::pair<std::string, std::set<std::string>> cpuInfo() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_first_of(" \t"));
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model" && line.rfind("model name", 0) == 0 && model.empty()) model = value;
    if (key == "flags" && flags.empty()) {
      std::istringstream words(value);
      for (std::string w; words >> w;) flags.insert(w);
    }
  }
  return {model, flags};
}

// Families by kernel generation; a CPU with AVX-512 runs SkylakeX kernels,
// one with AVX2+FMA Haswell kernels.
std::string fasterCoreFor(const std::string& core, const std::set<std::string>& flags) {
  static const std::set<std::string> kAvx512 = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  static const std::set<std::string> kAvx2 = {"Haswell", "Zen", "SkylakeX", "Cooperlake",
                                              "SapphireRapids"};
  if (flags.count("avx512f") && flags.count("avx512bw") && !kAvx512.count(core)) {
    return "SkylakeX";
  }
  if (flags.count("avx2") && flags.count("fma") && !kAvx2.count(core)) return "Haswell";
  return "";
}

}  // namespace

BlasInfo blasInfo() {
  BlasInfo info;
  info.config = openblas_get_config();
  info.coreName = openblas_get_corename();
  auto [model, flags] = cpuInfo();
  info.cpuModel = model;
  info.fasterCore = fasterCoreFor(info.coreName, flags);
  return info;
}

std::string blasSummary() {
  const BlasInfo b = blasInfo();
  std::string out = fmt::format("BLAS: {}, kernel family {} on {}", b.config, b.coreName,
                                b.cpuModel.empty() ? "an unknown CPU" : b.cpuModel);
  if (!b.fasterCore.empty()) {
    out += fmt::format("; this CPU supports the faster {0} kernels: set OPENBLAS_CORETYPE={0}",
                       b.fasterCore);
  }
  return out;
}

}  // namespace distlab
