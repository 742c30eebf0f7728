#include "emulator/workloads/engine_registry.hpp"

#include <mutex>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {

// Engine sources define these (local_engine.cpp, ddp_engine.cpp, fsdp_engine.cpp).
void registerLocalEngine();
void registerDdpEngine();
void registerFsdpEngine();

namespace {
std::map<std::string, EngineInfo>& registry() {
  static std::map<std::string, EngineInfo> engines;
  return engines;
}
void ensureBuiltins() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerLocalEngine();
    registerDdpEngine();
    registerFsdpEngine();
  });
}
}  // namespace

std::string optionTypeName(OptionType type) {
  switch (type) {
    case OptionType::kBool: return "true or false";
    case OptionType::kInt: return "an integer";
    case OptionType::kFloat: return "a number";
    case OptionType::kString: return "a string";
    case OptionType::kBoolOrInt: return "true, false or an integer";
  }
  return "?";
}

void registerEngine(EngineInfo info) {
  auto& engines = registry();
  if (engines.count(info.name)) throw ValueError("engine '" + info.name + "' registered twice");
  std::string name = info.name;
  engines.emplace(name, std::move(info));
}

const EngineInfo* findEngine(const std::string& name) {
  ensureBuiltins();
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string> engineNames() {
  ensureBuiltins();
  std::vector<std::string> names;
  for (const auto& [name, info] : registry()) names.push_back(name);
  return names;
}

}  // namespace distlab::emulator
