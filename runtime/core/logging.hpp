#pragma once
// Leveled logging, one macro family: DL_LOG(INFO, "format {}", args...).
//
// The effective level follows PyTorch's matrix of TORCH_CPP_LOG_LEVEL and
// TORCH_DISTRIBUTED_DEBUG (docs/pytorch-semantics.md, "Debug levels and logging"):
//   TORCH_CPP_LOG_LEVEL=ERROR|WARNING|INFO   -> Error | Warning | Info
//   TORCH_CPP_LOG_LEVEL=INFO + debug INFO    -> Debug
//   TORCH_CPP_LOG_LEVEL=INFO + debug DETAIL  -> Trace
// Unset TORCH_CPP_LOG_LEVEL means WARNING (PyTorch's default). Both variables
// are read at start-up (their first use) through runtime_env.hpp's
// single-variable readers; a bad value is reported once and the default used.
//
// Every line carries the level, wall time, the process's rank (or '-') and the
// source location:  "[I 12:03:04.512 rank 1 reducer.cpp:88] message".
// Thread-safe: a line is written with one call, lines never interleave.
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace distlab {

enum class LogLevel { kTrace = 0, kDebug = 1, kInfo = 2, kWarning = 3, kError = 4, kFatal = 5 };

// Parses TORCH_CPP_LOG_LEVEL's values (TRACE, DEBUG, INFO, WARNING, ERROR,
// FATAL, any case); throws ValueError naming `source`.
LogLevel parseLogLevel(std::string_view text, std::string_view source);
std::string_view logLevelName(LogLevel level);

// The effective level: the lowest level that is printed.
LogLevel logLevel();
// Overrides TORCH_CPP_LOG_LEVEL (the debug-level matrix still applies).
void setCppLogLevel(LogLevel level);
// Re-reads TORCH_CPP_LOG_LEVEL (readCppLogLevelEnv); throws ValueError on a bad value.
void setLogLevelFromEnv();
// Recomputes the effective level after the debug level changed.
void refreshLogLevel();
inline bool logEnabled(LogLevel level) { return level >= logLevel(); }

// The rank printed in each line; -1 prints '-'. Read from RANK at start-up
// (readRankEnv; a malformed RANK prints '-'), set by initProcessGroup.
void setLogRank(int rank);
int logRank();

namespace detail {
void logWrite(LogLevel level, const char* file, int line, std::string_view message);
}  // namespace detail

}  // namespace distlab

#define DL_LOG_LEVEL_TRACE ::distlab::LogLevel::kTrace
#define DL_LOG_LEVEL_DEBUG ::distlab::LogLevel::kDebug
#define DL_LOG_LEVEL_INFO ::distlab::LogLevel::kInfo
#define DL_LOG_LEVEL_WARNING ::distlab::LogLevel::kWarning
#define DL_LOG_LEVEL_ERROR ::distlab::LogLevel::kError
#define DL_LOG_LEVEL_FATAL ::distlab::LogLevel::kFatal

// DL_LOG(INFO, "bucket {} ready", index); arguments are formatted only when
// the level is enabled.
#define DL_LOG(level, ...)                                                       \
  do {                                                                           \
    if (::distlab::logEnabled(DL_LOG_LEVEL_##level)) {                           \
      ::distlab::detail::logWrite(DL_LOG_LEVEL_##level, __FILE__, __LINE__,      \
                                  ::fmt::format(__VA_ARGS__));                   \
    }                                                                            \
  } while (0)
