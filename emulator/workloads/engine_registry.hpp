#pragma once
// Training engines by name ("local", "ddp"; later "fsdp", "zero", "join"), so a
// new engine slots into scenario files without touching the parser or the
// runner: it registers its name, the options it accepts (validated by the
// parser with file:line errors) and a factory the training driver calls.
//
// Each engine's source file defines a register<Name>Engine() function that
// calls registerEngine(); engine_registry.cpp calls every one of them (the
// engines' runtime libraries are always built: emulator/workloads/CMakeLists.txt)
// once, before the first lookup. Explicit calls, not static registrars: the
// workloads room is a static library, and the linker leaves out an object file
// that nothing references, registrar and all.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace distlab::emulator {

enum class OptionType { kBool, kInt, kFloat, kString, kBoolOrInt };
std::string optionTypeName(OptionType type);

class TrainingEngine;       // training_engine.hpp
struct TrainingWorkload;    // workload_spec.hpp
struct EngineContext;       // training_engine.hpp

struct EngineInfo {
  std::string name;
  std::map<std::string, OptionType> options;  // accepted engine options
  // Allowed [lo, hi] of numeric options; any numeric option must be finite.
  std::map<std::string, std::pair<double, double>> optionRanges;
  // Checks of options against each other and the world size, after each
  // option's own type and range: why they do not fit, or nullopt.
  std::function<std::optional<std::string>(const TrainingWorkload&, int worldSize)> validate;
  std::vector<std::string> commHooks;         // accepted comm_hook values ({"none"} if none)
  bool distributed = true;                    // needs a process group
  bool joinable = false;                      // TrainingEngine::joinable() is non-null
  std::function<std::unique_ptr<TrainingEngine>(const EngineContext&)> factory;
};

void registerEngine(EngineInfo info);
const EngineInfo* findEngine(const std::string& name);  // nullptr when unknown
std::vector<std::string> engineNames();                 // sorted

}  // namespace distlab::emulator
