#include "runtime/optim/optimizer_factory.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/core/errors.hpp"
#include "runtime/optim/adam.hpp"
#include "runtime/optim/sgd.hpp"

namespace distlab::optim {
namespace {

// Every group's options completed as defaults <- group overrides; rejects
// names the kind does not know.
std::vector<ParamGroup> withDefaults(std::vector<ParamGroup> groups, const Options& defaults,
                                     const Options& known, const std::string& kind) {
  auto check = [&](const Options& options) {
    for (const auto& [key, value] : options) {
      if (known.count(key)) continue;
      std::vector<std::string> names;
      for (const auto& [k, v] : known) names.push_back(k);
      throw ValueError(fmt::format("optimizer '{}' has no option '{}' (its options: {})", kind,
                                   key, fmt::join(names, ", ")));
    }
  };
  check(defaults);
  for (ParamGroup& g : groups) {
    check(g.options);
    Options merged = defaults;
    for (const auto& [k, v] : g.options) merged[k] = v;
    g.options = std::move(merged);
  }
  return groups;
}

double valueOr(const Options& o, const char* key, double fallback) {
  auto it = o.find(key);
  return it == o.end() ? fallback : it->second;
}

// The options struct whose defaults are `o` (so addParamGroup fills the
// user's defaults, not the kind's).
SgdOptions sgdFrom(const Options& o) {
  SgdOptions s;
  s.lr = valueOr(o, "lr", s.lr);
  s.momentum = valueOr(o, "momentum", s.momentum);
  s.dampening = valueOr(o, "dampening", s.dampening);
  s.weightDecay = valueOr(o, "weight_decay", s.weightDecay);
  s.nesterov = valueOr(o, "nesterov", s.nesterov) != 0.0;
  s.maximize = valueOr(o, "maximize", s.maximize) != 0.0;
  return s;
}

template <typename T>
T adamFrom(const Options& o) {
  T a;
  a.lr = valueOr(o, "lr", a.lr);
  a.beta1 = valueOr(o, "beta1", a.beta1);
  a.beta2 = valueOr(o, "beta2", a.beta2);
  a.eps = valueOr(o, "eps", a.eps);
  a.weightDecay = valueOr(o, "weight_decay", a.weightDecay);
  a.amsgrad = valueOr(o, "amsgrad", a.amsgrad) != 0.0;
  a.maximize = valueOr(o, "maximize", a.maximize) != 0.0;
  return a;
}

}  // namespace

OptimizerFactory optimizerFactory(const std::string& kind) {
  if (kind == "sgd") {
    return [](std::vector<ParamGroup> groups, const Options& defaults) {
      auto completed = withDefaults(std::move(groups), defaults, SgdOptions{}.toMap(), "sgd");
      return std::make_unique<SGD>(std::move(completed), sgdFrom(defaults));
    };
  }
  if (kind == "adam" || kind == "adamw") {
    const bool decoupled = kind == "adamw";
    return [decoupled, kind](std::vector<ParamGroup> groups,
                             const Options& defaults) -> std::unique_ptr<Optimizer> {
      const Options known = decoupled ? AdamWOptions{}.toMap() : AdamOptions{}.toMap();
      auto completed = withDefaults(std::move(groups), defaults, known, kind);
      if (decoupled) {
        return std::make_unique<AdamW>(std::move(completed), adamFrom<AdamWOptions>(defaults));
      }
      return std::make_unique<Adam>(std::move(completed), adamFrom<AdamOptions>(defaults));
    };
  }
  throw ValueError(
      fmt::format("unknown optimizer kind '{}'; use one of: sgd, adam, adamw", kind));
}

}  // namespace distlab::optim
