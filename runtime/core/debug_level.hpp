#pragma once
// TORCH_DISTRIBUTED_DEBUG: OFF (default), INFO, DETAIL. Settable and readable at
// run time (PyTorch: set_debug_level / set_debug_level_from_env / get_debug_level).
#include <string>
#include <string_view>

namespace distlab {

enum class DebugLevel { kOff = 0, kInfo = 1, kDetail = 2 };

// Parses "OFF" | "INFO" | "DETAIL" (any case). Throws ValueError naming
// `source` (for example the environment variable) and the allowed values.
DebugLevel parseDebugLevel(std::string_view text, std::string_view source);
std::string_view debugLevelName(DebugLevel level);

// Process-wide level; thread-safe. Initialised on first use from
// TORCH_DISTRIBUTED_DEBUG through runtime_env.hpp's readDistributedDebugEnv (a
// bad value is logged and OFF used; initProcessGroup's read of the whole
// environment throws for it). The DETAIL wrapper checks it at each group's
// creation, so setDebugLevel() before creating a group decides that group.
DebugLevel debugLevel();
void setDebugLevel(DebugLevel level);
// Re-reads TORCH_DISTRIBUTED_DEBUG (unset means OFF); throws ValueError on a bad value.
void setDebugLevelFromEnv();

}  // namespace distlab
