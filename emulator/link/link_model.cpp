#include "emulator/link/link_model.hpp"

#include <fmt/format.h>

#include <map>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {

namespace {

// Round figures of the usual links (one direction, per GPU/NIC):
// NVLink 4 ~ 150 GB/s usable busbw per GPU at ~2 us, PCIe 4 x16 ~ 24 GB/s at
// ~5 us, HDR InfiniBand 25 GB/s at ~3 us, Ethernet with TCP at 100/10/1 Gbit/s.
const std::map<std::string, LinkModel>& presets() {
  static const std::map<std::string, LinkModel> table = {
      {"nvlink", {"nvlink", 2.0, 150.0}},
      {"pcie", {"pcie", 5.0, 24.0}},
      {"infiniband", {"infiniband", 3.0, 25.0}},
      {"ethernet-100g", {"ethernet-100g", 10.0, 12.5}},
      {"ethernet-10g", {"ethernet-10g", 30.0, 1.25}},
      {"ethernet-1g", {"ethernet-1g", 50.0, 0.125}},
  };
  return table;
}

}  // namespace

double busFactor(comm::OpType op, int n) {
  using comm::OpType;
  if (n <= 1) return 0.0;  // nothing crosses a link
  const double nn = n;
  switch (op) {
    case OpType::kAllreduce:
    case OpType::kAllreduceCoalesced:
      return 2.0 * (nn - 1) / nn;
    case OpType::kAllgather:
    case OpType::kAllgatherBase:
    case OpType::kAllgatherCoalesced:
    case OpType::kReduceScatter:
    case OpType::kReduceScatterBase:
    case OpType::kAlltoall:
    case OpType::kAlltoallBase:
    case OpType::kGather:
    case OpType::kScatter:
      return (nn - 1) / nn;
    case OpType::kBarrier:
      return 0.0;
    default:  // broadcast, reduce, send, recv
      return 1.0;
  }
}

double LinkModel::seconds(comm::OpType op, int64_t bytes, int n) const {
  if (!enabled()) return 0.0;
  double t = latencyUs * 1e-6;
  if (bandwidthGBs > 0) t += static_cast<double>(bytes) * busFactor(op, n) / (bandwidthGBs * 1e9);
  return t;
}

LinkModel linkPreset(const std::string& name) {
  auto it = presets().find(name);
  if (it == presets().end()) {
    throw ValueError(fmt::format("unknown link preset '{}'; known presets: {}", name,
                                 fmt::join(linkPresetNames(), ", ")));
  }
  return it->second;
}

std::vector<std::string> linkPresetNames() {
  std::vector<std::string> names;
  for (const auto& [name, model] : presets()) names.push_back(name);
  return names;
}

}  // namespace distlab::emulator
