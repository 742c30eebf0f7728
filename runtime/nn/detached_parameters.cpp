#include "runtime/nn/detached_parameters.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/core/errors.hpp"

namespace distlab::nn {
namespace {

std::vector<std::string> parameterNames(const Module& root) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : root.namedParameters()) names.push_back(name);
  return names;
}

// The module that owns `name` and the parameter's local name; nullptr when no
// module of `root` has it.
std::pair<Module*, std::string> ownerOf(Module& root, const std::string& name) {
  const size_t dot = name.rfind('.');
  const std::string path = dot == std::string::npos ? "" : name.substr(0, dot);
  const std::string local = dot == std::string::npos ? name : name.substr(dot + 1);
  for (auto& [modulePath, module] : root.namedModules()) {
    if (modulePath == path && module->hasParameter(local)) return {module, local};
  }
  return {nullptr, local};
}

}  // namespace

DetachedParameters::DetachedParameters(Module& root, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    auto [owner, local] = ownerOf(root, name);
    if (!owner) {
      throw ValueError(fmt::format("no parameter \"{}\" in the module; its parameters: {}", name,
                                   fmt::join(parameterNames(root), ", ")));
    }
    Tensor original = owner->param(local);
    owner->setParameter(local, original.detach());
    swapped_.push_back({owner, local, std::move(original)});
  }
}

DetachedParameters::~DetachedParameters() {
  for (auto it = swapped_.rbegin(); it != swapped_.rend(); ++it) {
    it->owner->setParameter(it->localName, std::move(it->original));
  }
}

}  // namespace distlab::nn
