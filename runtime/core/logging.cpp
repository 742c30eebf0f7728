#include "runtime/core/logging.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

#include "runtime/core/clock.hpp"
#include "runtime/core/debug_level.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab {
namespace {

std::atomic<int> gCppLevel{-1};        // from TORCH_CPP_LOG_LEVEL; -1 = not read yet
std::atomic<int> gEffective{-1};       // cached effective level
std::atomic<int> gRank{-2};            // -2 = not read yet
std::mutex gWriteMutex;

// Start-up: TORCH_CPP_LOG_LEVEL through the one reader (Note [Environment read
// once] in runtime_env.hpp); a bad value is reported, never thrown from a log call.
LogLevel cppLevel() {
  int v = gCppLevel.load(std::memory_order_relaxed);
  if (v >= 0) return static_cast<LogLevel>(v);
  LogLevel level = LogLevel::kWarning;
  try {
    level = readCppLogLevelEnv();
  } catch (const ValueError& e) {
    std::fprintf(stderr, "[E distlab] %s; using WARNING\n", e.what());
  }
  gCppLevel.store(static_cast<int>(level));
  return level;
}

LogLevel computeEffective() {
  LogLevel base = cppLevel();
  if (base != LogLevel::kInfo) return base;
  switch (debugLevel()) {
    case DebugLevel::kOff: return LogLevel::kInfo;
    case DebugLevel::kInfo: return LogLevel::kDebug;
    case DebugLevel::kDetail: return LogLevel::kTrace;
  }
  return base;
}

const char* shortName(LogLevel level) {
  static constexpr const char* kNames[] = {"T", "D", "I", "W", "E", "F"};
  return kNames[static_cast<int>(level)];
}

const char* baseName(const char* path) {
  const char* base = path;
  for (const char* p = path; *p; ++p) {
    if (*p == '/') base = p + 1;
  }
  return base;
}

}  // namespace

LogLevel parseLogLevel(std::string_view text, std::string_view source) {
  std::string v;
  for (char c : text) v.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  if (v == "TRACE") return LogLevel::kTrace;
  if (v == "DEBUG") return LogLevel::kDebug;
  if (v == "INFO") return LogLevel::kInfo;
  if (v == "WARNING" || v == "WARN") return LogLevel::kWarning;
  if (v == "ERROR") return LogLevel::kError;
  if (v == "FATAL") return LogLevel::kFatal;
  throw ValueError(std::string(source) + "='" + std::string(text) +
                   "' is invalid; allowed values: TRACE, DEBUG, INFO, WARNING, ERROR, FATAL");
}

std::string_view logLevelName(LogLevel level) {
  static constexpr const char* kNames[] = {"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"};
  return kNames[static_cast<int>(level)];
}

LogLevel logLevel() {
  int v = gEffective.load(std::memory_order_relaxed);
  if (v >= 0) return static_cast<LogLevel>(v);
  LogLevel level = computeEffective();
  gEffective.store(static_cast<int>(level));
  return level;
}

void setCppLogLevel(LogLevel level) {
  gCppLevel.store(static_cast<int>(level));
  refreshLogLevel();
}

void setLogLevelFromEnv() { setCppLogLevel(readCppLogLevelEnv()); }

void refreshLogLevel() { gEffective.store(static_cast<int>(computeEffective())); }

void setLogRank(int rank) { gRank.store(rank); }

int logRank() {
  int rank = gRank.load();
  if (rank != -2) return rank;
  try {
    rank = readRankEnv().value_or(-1);
  } catch (const ValueError&) {
    rank = -1;  // initProcessGroup reports a malformed RANK with the proper error
  }
  gRank.store(rank);
  return rank;
}

namespace detail {

void logWrite(LogLevel level, const char* file, int line, std::string_view message) {
  int64_t us = wallClockNowUs();
  std::time_t seconds = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  localtime_r(&seconds, &tm);
  int rank = logRank();
  std::string rankText = rank >= 0 ? std::to_string(rank) : std::string("-");
  std::string text = fmt::format("[{} {:02}:{:02}:{:02}.{:03} rank {} {}:{}] {}\n",
                                 shortName(level), tm.tm_hour, tm.tm_min, tm.tm_sec,
                                 (us / 1000) % 1000, rankText, baseName(file), line, message);
  std::lock_guard<std::mutex> lock(gWriteMutex);
  ssize_t unused = ::write(STDERR_FILENO, text.data(), text.size());
  (void)unused;
}

}  // namespace detail
}  // namespace distlab
