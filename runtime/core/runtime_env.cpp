// The one reader of the environment (Note [Environment read once]).
#include "runtime/core/runtime_env.hpp"

#include <limits>

#include <fmt/format.h>

#include "runtime/core/env.hpp"
#include "runtime/core/errors.hpp"

namespace distlab {
namespace {

constexpr int kIntMax = std::numeric_limits<int>::max();

std::optional<int> readIntVar(const char* name, int min, int max) {
  auto v = env::getInt(name, min, max);
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

int requireIntVar(const std::optional<int>& value, const char* name, int min, int max) {
  if (value) return *value;
  throw ValueError(fmt::format("environment variable {} is not set; set it to an integer in "
                               "[{}, {}]",
                               name, min, max));
}

// A non-empty value, or nullopt for unset and empty.
std::optional<std::string> readNonEmptyVar(const char* name) {
  auto v = env::getString(name);
  if (!v || v->empty()) return std::nullopt;
  return v;
}

// `first`, or `second` when `first` is unset (the other spelling).
std::optional<bool> readBoolPair(const char* first, const char* second) {
  if (auto v = env::getBool(first)) return v;
  return env::getBool(second);
}

std::string trimBlanks(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> readIfnameListVar(const char* name) {
  const auto text = readNonEmptyVar(name);
  if (!text) return {};
  return parseIfnameList(*text, fmt::format("environment variable {}", name));
}

DetailExchange readDetailExchangeVar() {
  const auto v = env::getChoice("DISTLAB_DETAIL_EXCHANGE", {"backend", "store"});
  return v && *v == "store" ? DetailExchange::kStore : DetailExchange::kBackend;
}

FrDumpSignal readDumpSignalVar() {
  const auto v = env::getChoice("DISTLAB_FR_DUMP_SIGNAL", {"USR1", "USR2", "OFF"});
  if (!v || *v == "USR2") return FrDumpSignal::kUsr2;
  return *v == "USR1" ? FrDumpSignal::kUsr1 : FrDumpSignal::kOff;
}

void readFlightRecorderVars(RuntimeEnv& e) {
  auto size = env::getInt("TORCH_FR_BUFFER_SIZE", 0, kMaxFrBufferSize);
  if (!size) size = env::getInt("TORCH_NCCL_TRACE_BUFFER_SIZE", 0, kMaxFrBufferSize);
  if (size) e.frBufferSize = *size;
  auto prefix = env::getString("TORCH_FR_DUMP_TEMP_FILE");
  if (!prefix) prefix = env::getString("TORCH_NCCL_DEBUG_INFO_TEMP_FILE");
  if (prefix && !prefix->empty()) e.frDumpPrefix = *prefix;
}

void readScenarioVars(RuntimeEnv& e) {
  e.scenarioFile = readNonEmptyVar("DISTLAB_SCENARIO").value_or("");
  e.scenarioResultDir = readNonEmptyVar("DISTLAB_SCENARIO_RESULT_DIR").value_or("");
  e.scenarioTrace = env::getBool("DISTLAB_SCENARIO_TRACE").value_or(false);
  if (!e.scenarioFile.empty() && e.scenarioResultDir.empty()) {
    throw ValueError(
        "environment variable DISTLAB_SCENARIO is set but DISTLAB_SCENARIO_RESULT_DIR is not; "
        "`distlab run` sets both: run the program through it, or unset DISTLAB_SCENARIO");
  }
}

}  // namespace

std::vector<std::string> parseIfnameList(std::string_view text, std::string_view what) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string item = trimBlanks(
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos
                                                           : comma - start));
    if (item.empty()) {
      throw ValueError(fmt::format(
          "{}='{}': empty interface name; give a comma-separated list such as 'eth0,eth1'",
          what, text));
    }
    out.push_back(std::move(item));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

DebugLevel readDistributedDebugEnv() {
  const char* name = "TORCH_DISTRIBUTED_DEBUG";
  const auto text = env::getString(name);
  if (!text) return DebugLevel::kOff;
  return parseDebugLevel(*text, fmt::format("environment variable {}", name));
}

LogLevel readCppLogLevelEnv() {
  const char* name = "TORCH_CPP_LOG_LEVEL";
  const auto text = env::getString(name);
  if (!text) return LogLevel::kWarning;
  return parseLogLevel(*text, fmt::format("environment variable {}", name));
}

std::optional<int> readRankEnv() { return readIntVar("RANK", 0, kIntMax); }

// In kRuntimeEnvVars's order, so the first bad value is the one reported.
RuntimeEnv readRuntimeEnv() {
  RuntimeEnv e;
  e.distributedDebug = readDistributedDebugEnv();
  e.cppLogLevel = readCppLogLevelEnv();
  e.rank = readRankEnv();
  e.worldSize = readIntVar("WORLD_SIZE", 1, kIntMax);
  e.masterAddr = readNonEmptyVar("MASTER_ADDR");
  e.masterPort = readIntVar("MASTER_PORT", 1, 65535);
  e.storeExternal = env::getBool("DISTLAB_STORE_EXTERNAL").value_or(false);
  e.storePrefix = env::getString("DISTLAB_STORE_PREFIX").value_or("");
  e.launchReleaseFd = readIntVar("DISTLAB_LAUNCH_RELEASE_FD", 0, kIntMax).value_or(-1);
  e.ddpSetLastBucketCap = env::getBool("DDP_SET_LAST_BUCKET_CAP").value_or(false);
  readFlightRecorderVars(e);
  e.detailExchange = readDetailExchangeVar();
  e.watchdog = env::getBool("DISTLAB_WATCHDOG").value_or(true);
  auto mode = env::getInt("DISTLAB_ASYNC_ERROR_HANDLING", 0, 3);
  if (!mode) mode = env::getInt("TORCH_NCCL_ASYNC_ERROR_HANDLING", 0, 3);
  if (mode) e.asyncErrorHandling = static_cast<int>(*mode);
  e.frDumpSignal = readDumpSignalVar();
  e.glooSocketIfnames = readIfnameListVar("GLOO_SOCKET_IFNAME");
  e.ncclBlockingWait =
      readBoolPair("TORCH_NCCL_BLOCKING_WAIT", "DISTLAB_NCCL_BLOCKING_WAIT").value_or(false);
  readScenarioVars(e);
  e.path = env::getString("PATH");
  return e;
}

int RuntimeEnv::requiredRank() const { return requireIntVar(rank, "RANK", 0, kIntMax); }

int RuntimeEnv::requiredWorldSize() const {
  return requireIntVar(worldSize, "WORLD_SIZE", 1, kIntMax);
}

int RuntimeEnv::requiredMasterPort() const {
  return requireIntVar(masterPort, "MASTER_PORT", 1, 65535);
}

}  // namespace distlab
