#include "emulator/link/topology.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>
#include <sstream>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

constexpr int kMaxRanksPerNode = 1 << 20;

// Note [Topology model]'s presets.
const std::map<std::string, Topology>& topologyPresets() {
  static const std::map<std::string, Topology> table = [] {
    std::map<std::string, Topology> t;
    t["dgx-h100"] = {"dgx-h100", 8, {"nvlink4", 2.0, 450.0}, {"ndr-infiniband", 3.0, 50.0}, 1};
    t["pcie-ib"] = {"pcie-ib", 8, linkPreset("pcie"), {"hdr-infiniband/8", 3.0, 25.0 / 8}, 1};
    t["ethernet"] = {"ethernet", 4, linkPreset("pcie"), {"ethernet-100g/4", 10.0, 12.5 / 4}, 2};
    for (const auto& link : linkPresetNames()) {
      const LinkModel m = linkPreset(link);
      t["flat-" + link] = {"flat-" + link, 1, m, m, 1};
    }
    return t;
  }();
  return table;
}

[[noreturn]] void bad(const std::string& spec, const std::string& why) {
  throw ValueError(fmt::format(
      "topology '{}': {}; give a preset ({}) or ranks_per_node=N,intra=LINK,inter=LINK"
      "[,oversubscription=K] with LINK a link preset ({}) or LAT_US:BW_GBS",
      spec, why, fmt::join(topologyPresetNames(), ", "), fmt::join(linkPresetNames(), ", ")));
}

double number(const std::string& spec, const std::string& key, const std::string& text,
              double lo, double hi) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v) || v < lo || v > hi) {
    bad(spec, fmt::format("{}='{}' is not a number in [{}, {}]", key, text, lo, hi));
  }
  return v;
}

LinkModel link(const std::string& spec, const std::string& key, const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    try {
      return linkPreset(text);
    } catch (const ValueError&) {
      bad(spec, fmt::format("{}='{}' is not a link preset", key, text));
    }
  }
  LinkModel m{text, number(spec, key + " latency", text.substr(0, colon), 0, 1e6),
              number(spec, key + " bandwidth", text.substr(colon + 1), 1e-6, 1e6)};
  return m;
}

Topology written(const std::string& spec) {
  Topology t{spec, 0, {}, {}, 1};
  bool intra = false, inter = false;
  std::istringstream parts(spec);
  for (std::string part; std::getline(parts, part, ',');) {
    const auto eq = part.find('=');
    if (eq == std::string::npos) bad(spec, fmt::format("'{}' is not key=value", part));
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "ranks_per_node") {
      const double v = number(spec, key, value, 1, kMaxRanksPerNode);
      if (v != std::floor(v)) bad(spec, fmt::format("{}='{}' is not a whole number", key, value));
      t.ranksPerNode = static_cast<int>(v);
    } else if (key == "intra") {
      t.intra = link(spec, key, value);
      intra = true;
    } else if (key == "inter") {
      t.inter = link(spec, key, value);
      inter = true;
    } else if (key == "oversubscription") {
      t.oversubscription = number(spec, key, value, 1, 1e6);
    } else {
      bad(spec, fmt::format("unknown key '{}'", key));
    }
  }
  if (t.ranksPerNode == 0 || !intra || !inter) {
    bad(spec, "ranks_per_node, intra and inter are all required");
  }
  return t;
}

}  // namespace

Topology parseTopology(const std::string& spec) {
  const auto it = topologyPresets().find(spec);
  if (it != topologyPresets().end()) return it->second;
  if (spec.find('=') == std::string::npos) bad(spec, "unknown preset");
  return written(spec);
}

std::vector<std::string> topologyPresetNames() {
  std::vector<std::string> names;
  for (const auto& [name, t] : topologyPresets()) names.push_back(name);
  return names;
}

}  // namespace distlab::emulator
