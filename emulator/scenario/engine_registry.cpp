#include "emulator/scenario/engine_registry.hpp"

#include <mutex>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {

// Engine sources define these; the build defines DISTLAB_SCENARIO_HAVE_<ENGINE>
// for the ones it compiles (emulator/scenario/CMakeLists.txt).
void registerLocalEngine();
#if DISTLAB_SCENARIO_HAVE_DDP
void registerDdpEngine();
#endif
#if DISTLAB_SCENARIO_HAVE_FSDP
void registerFsdpEngine();
#endif

namespace {
std::map<std::string, EngineInfo>& registry() {
  static std::map<std::string, EngineInfo> engines;
  return engines;
}
void ensureBuiltins() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerLocalEngine();
#if DISTLAB_SCENARIO_HAVE_DDP
    registerDdpEngine();
#endif
#if DISTLAB_SCENARIO_HAVE_FSDP
    registerFsdpEngine();
#endif
  });
}
}  // namespace

std::string optionTypeName(OptionType type) {
  switch (type) {
    case OptionType::kBool: return "true or false";
    case OptionType::kInt: return "an integer";
    case OptionType::kFloat: return "a number";
    case OptionType::kString: return "a string";
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
