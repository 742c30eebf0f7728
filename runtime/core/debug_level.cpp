#include "runtime/core/debug_level.hpp"

#include <atomic>
#include <mutex>

#include <fmt/format.h>

#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab {
namespace {

std::atomic<int> gLevel{-1};  // -1: not yet read from the environment
std::once_flag gInitOnce;

}  // namespace

DebugLevel parseDebugLevel(std::string_view text, std::string_view source) {
  std::string v;
  for (char c : text) v.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  if (v == "OFF") return DebugLevel::kOff;
  if (v == "INFO") return DebugLevel::kInfo;
  if (v == "DETAIL") return DebugLevel::kDetail;
  throw ValueError(fmt::format("{}='{}' is invalid; allowed values: OFF, INFO, DETAIL", source,
                               text));
}

std::string_view debugLevelName(DebugLevel level) {
  switch (level) {
    case DebugLevel::kOff: return "OFF";
    case DebugLevel::kInfo: return "INFO";
    case DebugLevel::kDetail: return "DETAIL";
  }
  return "?";
}

DebugLevel debugLevel() {
  std::call_once(gInitOnce, [] {
    if (gLevel.load() >= 0) return;  // set explicitly before first read
    try {
      gLevel.store(static_cast<int>(readDistributedDebugEnv()));
    } catch (const ValueError& e) {
      // Reading the level must not throw from deep inside a collective; the
      // explicit entry points (setDebugLevelFromEnv, initProcessGroup) throw.
      detail::logWrite(LogLevel::kError, __FILE__, __LINE__,
                       std::string(e.what()) + "; using OFF");
      gLevel.store(static_cast<int>(DebugLevel::kOff));
    }
  });
  return static_cast<DebugLevel>(gLevel.load());
}

void setDebugLevel(DebugLevel level) {
  std::call_once(gInitOnce, [] {});
  gLevel.store(static_cast<int>(level));
  refreshLogLevel();
}

void setDebugLevelFromEnv() { setDebugLevel(readDistributedDebugEnv()); }

}  // namespace distlab
