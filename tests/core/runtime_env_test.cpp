// readRuntimeEnv(): every variable the runtime honours, read once into one
// struct (Note [Environment read once]): unset gives the documented default,
// a valid value its typed meaning, an invalid one a ValueError naming the
// variable, the value and what is allowed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/errors.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab {
namespace {

// Every spelling the table names, for the fixture to clear and the coverage check.
std::vector<std::string> allSpellings() {
  std::vector<std::string> names;
  for (const EnvVarInfo& v : kRuntimeEnvVars) {
    names.emplace_back(v.name);
    if (!v.alsoRead.empty()) names.emplace_back(v.alsoRead);
  }
  return names;
}

// Clears every variable of the table for one test and restores them after.
class RuntimeEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string& name : allSpellings()) {
      const char* old = ::getenv(name.c_str());
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      ::unsetenv(name.c_str());
    }
  }
  void TearDown() override {
    for (const auto& [name, old] : saved_) {
      if (old) ::setenv(name.c_str(), old->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
  }
  static void set(const char* name, const char* value) { ::setenv(name, value, 1); }
  static void unset(const char* name) { ::unsetenv(name); }

  // readRuntimeEnv() must throw ValueError whose text holds `fragment`.
  static void expectRejected(const std::string& fragment) {
    try {
      readRuntimeEnv();
      ADD_FAILURE() << "no ValueError; expected one saying: " << fragment;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(RuntimeEnvTest, UnsetMeansTheDocumentedDefaults) {
  const RuntimeEnv e = readRuntimeEnv();
  EXPECT_EQ(e.distributedDebug, DebugLevel::kOff);
  EXPECT_EQ(e.cppLogLevel, LogLevel::kWarning);
  EXPECT_FALSE(e.rank.has_value());
  EXPECT_FALSE(e.worldSize.has_value());
  EXPECT_FALSE(e.masterAddr.has_value());
  EXPECT_FALSE(e.masterPort.has_value());
  EXPECT_FALSE(e.storeExternal);
  EXPECT_EQ(e.storePrefix, "");
  EXPECT_FALSE(e.ddpSetLastBucketCap);
  EXPECT_EQ(e.frBufferSize, 2000);
  EXPECT_EQ(e.frDumpPrefix, "/tmp/distlab_fr_rank_");
  EXPECT_EQ(e.detailExchange, DetailExchange::kBackend);
  EXPECT_TRUE(e.watchdog);
  EXPECT_EQ(e.asyncErrorHandling, 2);
  EXPECT_EQ(e.frDumpSignal, FrDumpSignal::kUsr2);
  EXPECT_TRUE(e.glooSocketIfnames.empty());
  EXPECT_FALSE(e.ncclBlockingWait);
  EXPECT_FALSE(e.path.has_value());
}

TEST_F(RuntimeEnvTest, DebugAndLogLevels) {
  set("TORCH_DISTRIBUTED_DEBUG", "detail");
  set("TORCH_CPP_LOG_LEVEL", "info");
  RuntimeEnv e = readRuntimeEnv();
  EXPECT_EQ(e.distributedDebug, DebugLevel::kDetail);
  EXPECT_EQ(e.cppLogLevel, LogLevel::kInfo);
  set("TORCH_DISTRIBUTED_DEBUG", "VERBOSE");
  expectRejected("environment variable TORCH_DISTRIBUTED_DEBUG='VERBOSE' is invalid; allowed "
                 "values: OFF, INFO, DETAIL");
  unset("TORCH_DISTRIBUTED_DEBUG");
  set("TORCH_CPP_LOG_LEVEL", "LOUD");
  expectRejected("environment variable TORCH_CPP_LOG_LEVEL='LOUD' is invalid; allowed values: "
                 "TRACE, DEBUG, INFO, WARNING, ERROR, FATAL");
}

TEST_F(RuntimeEnvTest, RendezvousVariables) {
  set("RANK", "3");
  set("WORLD_SIZE", "4");
  set("MASTER_ADDR", "10.1.1.20");
  set("MASTER_PORT", "29500");
  set("DISTLAB_STORE_EXTERNAL", "1");
  set("DISTLAB_STORE_PREFIX", "job7/attempt_1");
  RuntimeEnv e = readRuntimeEnv();
  EXPECT_EQ(e.requiredRank(), 3);
  EXPECT_EQ(e.requiredWorldSize(), 4);
  EXPECT_EQ(e.masterAddr, "10.1.1.20");
  EXPECT_EQ(e.requiredMasterPort(), 29500);
  EXPECT_TRUE(e.storeExternal);
  EXPECT_EQ(e.storePrefix, "job7/attempt_1");
  set("MASTER_ADDR", "");
  EXPECT_FALSE(readRuntimeEnv().masterAddr.has_value());  // empty counts as unset

  set("RANK", "x");
  expectRejected("environment variable RANK='x' is not an integer; set it to an integer in "
                 "[0, 2147483647]");
  set("RANK", "-1");
  expectRejected("environment variable RANK=-1 is out of range");
  set("RANK", "0");
  set("WORLD_SIZE", "0");
  expectRejected("environment variable WORLD_SIZE=0 is out of range; set it to an integer in "
                 "[1, 2147483647]");
  set("WORLD_SIZE", "2");
  set("MASTER_PORT", "70000");
  expectRejected("environment variable MASTER_PORT=70000 is out of range; set it to an integer "
                 "in [1, 65535]");
  set("MASTER_PORT", "1");
  set("DISTLAB_STORE_EXTERNAL", "maybe");
  expectRejected("environment variable DISTLAB_STORE_EXTERNAL='maybe' is not a boolean");
}

TEST_F(RuntimeEnvTest, RequiredValuesSayToSetThem) {
  const RuntimeEnv e = readRuntimeEnv();
  const std::vector<std::pair<std::string, int (RuntimeEnv::*)() const>> cases = {
      {"environment variable RANK is not set; set it to an integer in [0, 2147483647]",
       &RuntimeEnv::requiredRank},
      {"environment variable WORLD_SIZE is not set; set it to an integer in [1, 2147483647]",
       &RuntimeEnv::requiredWorldSize},
      {"environment variable MASTER_PORT is not set; set it to an integer in [1, 65535]",
       &RuntimeEnv::requiredMasterPort}};
  for (const auto& [text, required] : cases) {
    try {
      (e.*required)();
      ADD_FAILURE() << "no ValueError: " << text;
    } catch (const ValueError& err) {
      EXPECT_EQ(std::string(err.what()), text);
    }
  }
}

TEST_F(RuntimeEnvTest, DdpLastBucketCap) {
  set("DDP_SET_LAST_BUCKET_CAP", "1");
  EXPECT_TRUE(readRuntimeEnv().ddpSetLastBucketCap);
  set("DDP_SET_LAST_BUCKET_CAP", "0");
  EXPECT_FALSE(readRuntimeEnv().ddpSetLastBucketCap);
  set("DDP_SET_LAST_BUCKET_CAP", "2");
  expectRejected("environment variable DDP_SET_LAST_BUCKET_CAP='2' is not a boolean");
}

TEST_F(RuntimeEnvTest, FlightRecorderSizeAndPrefixWithTheirOlderSpellings) {
  set("TORCH_NCCL_TRACE_BUFFER_SIZE", "16");
  EXPECT_EQ(readRuntimeEnv().frBufferSize, 16);  // older spelling, newer unset
  set("TORCH_FR_BUFFER_SIZE", "0");
  EXPECT_EQ(readRuntimeEnv().frBufferSize, 0);   // the newer one wins
  set("TORCH_FR_BUFFER_SIZE", "lots");
  expectRejected("environment variable TORCH_FR_BUFFER_SIZE='lots' is not an integer");
  set("TORCH_FR_BUFFER_SIZE", "-1");
  expectRejected("environment variable TORCH_FR_BUFFER_SIZE=-1 is out of range; set it to an "
                 "integer in [0, 1073741824]");
  unset("TORCH_FR_BUFFER_SIZE");
  set("TORCH_NCCL_TRACE_BUFFER_SIZE", "x");
  expectRejected("environment variable TORCH_NCCL_TRACE_BUFFER_SIZE='x' is not an integer");
  unset("TORCH_NCCL_TRACE_BUFFER_SIZE");

  set("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/old/fr_");
  EXPECT_EQ(readRuntimeEnv().frDumpPrefix, "/old/fr_");
  set("TORCH_FR_DUMP_TEMP_FILE", "/new/fr_");
  EXPECT_EQ(readRuntimeEnv().frDumpPrefix, "/new/fr_");
  set("TORCH_FR_DUMP_TEMP_FILE", "");
  EXPECT_EQ(readRuntimeEnv().frDumpPrefix, "/tmp/distlab_fr_rank_");  // empty: the default
}

TEST_F(RuntimeEnvTest, DetailExchangeAndWatchdog) {
  set("DISTLAB_DETAIL_EXCHANGE", "STORE");
  set("DISTLAB_WATCHDOG", "off");
  set("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3");
  set("DISTLAB_FR_DUMP_SIGNAL", "usr1");
  RuntimeEnv e = readRuntimeEnv();
  EXPECT_EQ(e.detailExchange, DetailExchange::kStore);
  EXPECT_FALSE(e.watchdog);
  EXPECT_EQ(e.asyncErrorHandling, 3);
  EXPECT_EQ(e.frDumpSignal, FrDumpSignal::kUsr1);
  set("DISTLAB_ASYNC_ERROR_HANDLING", "0");  // distlab's spelling wins
  set("DISTLAB_FR_DUMP_SIGNAL", "OFF");
  e = readRuntimeEnv();
  EXPECT_EQ(e.asyncErrorHandling, 0);
  EXPECT_EQ(e.frDumpSignal, FrDumpSignal::kOff);

  set("DISTLAB_DETAIL_EXCHANGE", "gloo");
  expectRejected("environment variable DISTLAB_DETAIL_EXCHANGE='gloo' is invalid; allowed "
                 "values: backend, store");
  unset("DISTLAB_DETAIL_EXCHANGE");
  set("DISTLAB_WATCHDOG", "sometimes");
  expectRejected("environment variable DISTLAB_WATCHDOG='sometimes' is not a boolean");
  unset("DISTLAB_WATCHDOG");
  set("DISTLAB_ASYNC_ERROR_HANDLING", "4");
  expectRejected("environment variable DISTLAB_ASYNC_ERROR_HANDLING=4 is out of range; set it "
                 "to an integer in [0, 3]");
  unset("DISTLAB_ASYNC_ERROR_HANDLING");
  set("TORCH_NCCL_ASYNC_ERROR_HANDLING", "one");
  expectRejected("environment variable TORCH_NCCL_ASYNC_ERROR_HANDLING='one' is not an integer");
  unset("TORCH_NCCL_ASYNC_ERROR_HANDLING");
  set("DISTLAB_FR_DUMP_SIGNAL", "HUP");
  expectRejected("environment variable DISTLAB_FR_DUMP_SIGNAL='HUP' is invalid; allowed values: "
                 "USR1, USR2, OFF");
}

TEST_F(RuntimeEnvTest, BackendVariables) {
  set("GLOO_SOCKET_IFNAME", " eth0, eth1 ");
  set("DISTLAB_NCCL_BLOCKING_WAIT", "yes");
  RuntimeEnv e = readRuntimeEnv();
  EXPECT_EQ(e.glooSocketIfnames, (std::vector<std::string>{"eth0", "eth1"}));
  EXPECT_TRUE(e.ncclBlockingWait);  // the distlab spelling, the torch one unset
  set("TORCH_NCCL_BLOCKING_WAIT", "0");
  set("GLOO_SOCKET_IFNAME", "");
  e = readRuntimeEnv();
  EXPECT_FALSE(e.ncclBlockingWait);  // the torch spelling wins
  EXPECT_TRUE(e.glooSocketIfnames.empty());  // empty counts as unset

  set("GLOO_SOCKET_IFNAME", "eth0,");
  expectRejected("environment variable GLOO_SOCKET_IFNAME='eth0,': empty interface name");
  unset("GLOO_SOCKET_IFNAME");
  set("TORCH_NCCL_BLOCKING_WAIT", "x");
  expectRejected("environment variable TORCH_NCCL_BLOCKING_WAIT='x' is not a boolean");
  unset("TORCH_NCCL_BLOCKING_WAIT");
  set("DISTLAB_NCCL_BLOCKING_WAIT", "2");
  expectRejected("environment variable DISTLAB_NCCL_BLOCKING_WAIT='2' is not a boolean");
}

TEST_F(RuntimeEnvTest, ScenarioOfAUserProgram) {
  RuntimeEnv e = readRuntimeEnv();
  EXPECT_TRUE(e.scenarioFile.empty());
  EXPECT_FALSE(e.scenarioTrace);
  set("DISTLAB_SCENARIO", "/tmp/s.toml");
  expectRejected("DISTLAB_SCENARIO is set but DISTLAB_SCENARIO_RESULT_DIR is not");
  set("DISTLAB_SCENARIO_RESULT_DIR", "/tmp/run");
  set("DISTLAB_SCENARIO_TRACE", "yes");
  e = readRuntimeEnv();
  EXPECT_EQ(e.scenarioFile, "/tmp/s.toml");
  EXPECT_EQ(e.scenarioResultDir, "/tmp/run");
  EXPECT_TRUE(e.scenarioTrace);
  set("DISTLAB_SCENARIO_TRACE", "maybe");
  expectRejected("environment variable DISTLAB_SCENARIO_TRACE='maybe' is not a boolean");
}

TEST_F(RuntimeEnvTest, PathForTheEmulator) {
  set("PATH", "/opt/mpi/bin:/usr/bin");
  EXPECT_EQ(readRuntimeEnv().path, "/opt/mpi/bin:/usr/bin");
}

// The start-up readers of the process-wide diagnostics read their variable
// alone: another variable's bad value does not change (or silence) them.
TEST_F(RuntimeEnvTest, SingleVariableReadersIgnoreOtherBadValues) {
  set("TORCH_FR_BUFFER_SIZE", "lots");
  set("TORCH_DISTRIBUTED_DEBUG", "info");
  set("TORCH_CPP_LOG_LEVEL", "error");
  set("RANK", "5");
  EXPECT_THROW(readRuntimeEnv(), ValueError);
  EXPECT_EQ(readDistributedDebugEnv(), DebugLevel::kInfo);
  EXPECT_EQ(readCppLogLevelEnv(), LogLevel::kError);
  EXPECT_EQ(readRankEnv(), 5);
  set("RANK", "five");
  EXPECT_THROW(readRankEnv(), ValueError);
}

// The first bad value in the table's order is the one reported.
TEST_F(RuntimeEnvTest, TheFirstBadValueInTableOrderIsReported) {
  set("PATH", "/usr/bin");
  set("RANK", "x");
  set("DISTLAB_WATCHDOG", "x");
  expectRejected("RANK='x'");
}

TEST_F(RuntimeEnvTest, LaunchReleaseFdIsADescriptorNumber) {
  EXPECT_EQ(readRuntimeEnv().launchReleaseFd, -1);  // unset: no wait
  set("DISTLAB_LAUNCH_RELEASE_FD", "7");
  EXPECT_EQ(readRuntimeEnv().launchReleaseFd, 7);
  set("DISTLAB_LAUNCH_RELEASE_FD", "-1");
  expectRejected("DISTLAB_LAUNCH_RELEASE_FD=-1 is out of range");
}

// Every variable of the table is exercised above (update both together), and
// each spelling appears once.
TEST_F(RuntimeEnvTest, TheTableListsEveryVariableOnce) {
  const std::set<std::string> tested = {
      "TORCH_DISTRIBUTED_DEBUG", "TORCH_CPP_LOG_LEVEL", "RANK", "WORLD_SIZE", "MASTER_ADDR",
      "MASTER_PORT", "DISTLAB_STORE_EXTERNAL", "DISTLAB_STORE_PREFIX", "DDP_SET_LAST_BUCKET_CAP",
      "TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE",
      "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "DISTLAB_DETAIL_EXCHANGE", "DISTLAB_WATCHDOG",
      "TORCH_NCCL_ASYNC_ERROR_HANDLING", "DISTLAB_ASYNC_ERROR_HANDLING", "DISTLAB_FR_DUMP_SIGNAL",
      "GLOO_SOCKET_IFNAME", "TORCH_NCCL_BLOCKING_WAIT", "DISTLAB_NCCL_BLOCKING_WAIT",
      "DISTLAB_SCENARIO", "DISTLAB_SCENARIO_RESULT_DIR", "DISTLAB_SCENARIO_TRACE", "PATH",
      "DISTLAB_LAUNCH_RELEASE_FD"};
  const std::vector<std::string> names = allSpellings();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), tested);
  EXPECT_EQ(names.size(), tested.size()) << "a spelling appears twice";
  for (const EnvVarInfo& v : kRuntimeEnvVars) {
    EXPECT_FALSE(v.meaning.empty()) << v.name;
    EXPECT_FALSE(v.defaultValue.empty()) << v.name;
    EXPECT_FALSE(v.allowed.empty()) << v.name;
    EXPECT_FALSE(v.usedBy.empty()) << v.name;
  }
}

}  // namespace
}  // namespace distlab
