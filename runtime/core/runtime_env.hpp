#pragma once
// RuntimeEnv: every environment variable distlab honours, read in one place
// (runtime_env.cpp, through env.hpp's validated getters) into one typed struct.
//
// Note [Environment read once]
// No component reads the environment. Each takes its setting as an option,
// and the layer that creates it fills that option from a RuntimeEnv:
//   initProcessGroup      readRuntimeEnv() once per initialization, before the
//                         rendezvous can block; the rendezvous, the default
//                         group and every later newGroup/split use that read
//                         (World::env, ProcessGroupConfig::env);
//   createProcessGroup    reads it when its config carries none (groups made
//                         without initProcessGroup); backends and decorators
//                         get it as BackendContext::env;
//   rendezvous()          the env:// method reads these variables by
//                         definition: from RendezvousOptions::env, else a read
//                         of its own;
//   DistributedDataParallel  one read at construction (DDP_SET_LAST_BUCKET_CAP
//                         into ReducerOptions, MASTER_ADDR/PORT for logging);
//   logging, debug level  process-wide, set from the environment at their first
//                         use (start-up) with the single-variable readers below.
// A bad value is a ValueError naming the variable, the value and what is
// allowed (env.hpp's texts), raised where it is read: initProcessGroup,
// createProcessGroup, rendezvous, the DDP constructor. The variables, their
// meaning, defaults and allowed values are listed in kRuntimeEnvVars below
// (docs/DESIGN.md, "Configuration", shows the same table).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/debug_level.hpp"
#include "runtime/core/logging.hpp"

namespace distlab {

inline constexpr int64_t kDefaultFrBufferSize = 2000;  // PyTorch's recommended size
inline constexpr const char* kDefaultFrDumpPrefix = "/tmp/distlab_fr_rank_";
inline constexpr int64_t kMaxFrBufferSize = int64_t{1} << 30;

// DISTLAB_DETAIL_EXCHANGE: how DETAIL's fingerprints travel
// (Note [DETAIL through the backend] in process_group_wrapper.hpp).
enum class DetailExchange { kBackend, kStore };
// DISTLAB_FR_DUMP_SIGNAL: the signal that makes the watchdog dump.
enum class FrDumpSignal { kOff, kUsr1, kUsr2 };

struct RuntimeEnv {
  // ---- diagnostics (docs/pytorch-semantics.md, "Debug levels and logging") ----
  // Validated by every read; the process-wide levels themselves are set at
  // their first use by the single-variable readers below, not from these fields.
  // TORCH_DISTRIBUTED_DEBUG: OFF (default), INFO (DDP construction log, unused
  // parameter names), DETAIL (also DDP runtime stats and the collective checks).
  DebugLevel distributedDebug = DebugLevel::kOff;
  // TORCH_CPP_LOG_LEVEL: the C++ log level before the debug-level matrix
  // (default WARNING).
  LogLevel cppLogLevel = LogLevel::kWarning;

  // ---- env:// rendezvous, the launcher's contract (docs/pytorch-semantics.md, "Initialization")
  std::optional<int> rank;        // RANK: this process's global rank; env:// needs it
  std::optional<int> worldSize;   // WORLD_SIZE: the number of processes; env:// needs it
  // MASTER_ADDR: rank 0's address (env:// on every rank but 0; rank 0 uses
  // 127.0.0.1 when unset). Empty counts as unset.
  std::optional<std::string> masterAddr;
  std::optional<int> masterPort;  // MASTER_PORT: the store's port on rank 0's host
  // DISTLAB_STORE_EXTERNAL: a TCP store server already runs at the address
  // (the launcher's), so rank 0 connects as a client too. Default false.
  bool storeExternal = false;
  // DISTLAB_STORE_PREFIX: env:// wraps its store in PrefixStore(prefix) (the
  // launcher sets one per restart round). Empty: no prefix.
  std::string storePrefix;
  // DISTLAB_LAUNCH_RELEASE_FD: a pipe the launcher closes once it has started
  // every rank; env:// waits for that before it rendezvouses (Note [Ranks
  // released together] in runtime/comm/store/rendezvous.hpp). -1: unset.
  int launchReleaseFd = -1;

  // ---- DDP (docs/pytorch-semantics.md, "DDP") ----
  // DDP_SET_LAST_BUCKET_CAP: the rebuilt buckets put the small first-bucket
  // cap on the last bucket instead of the first. Default false.
  bool ddpSetLastBucketCap = false;

  // ---- flight recorder (docs/pytorch-semantics.md, "Flight recorder") ----
  // TORCH_FR_BUFFER_SIZE (older spelling TORCH_NCCL_TRACE_BUFFER_SIZE, read
  // when the new one is unset): entries per group; 0 disables recording.
  int64_t frBufferSize = kDefaultFrBufferSize;
  // TORCH_FR_DUMP_TEMP_FILE (older TORCH_NCCL_DEBUG_INFO_TEMP_FILE): dump file
  // prefix, followed by the global rank and ".json". Empty: the default.
  std::string frDumpPrefix = kDefaultFrDumpPrefix;

  // ---- DETAIL checks, watchdog (docs/pytorch-semantics.md, "Watchdog and error handling")
  DetailExchange detailExchange = DetailExchange::kBackend;  // DISTLAB_DETAIL_EXCHANGE
  bool watchdog = true;  // DISTLAB_WATCHDOG: whether the watchdog watches new groups
  // DISTLAB_ASYNC_ERROR_HANDLING, else TORCH_NCCL_ASYNC_ERROR_HANDLING: what
  // follows a watchdog timeout; 0 nothing, 1 abort and exit, 2 abort only
  // (distlab's default), 3 exit without aborting.
  int asyncErrorHandling = 2;
  FrDumpSignal frDumpSignal = FrDumpSignal::kUsr2;  // DISTLAB_FR_DUMP_SIGNAL

  // ---- backends ----
  // GLOO_SOCKET_IFNAME: the interfaces Gloo binds to ("eth0,eth1"), split and
  // trimmed; empty: unset (Note [Gloo interfaces] in gloo_device.hpp).
  std::vector<std::string> glooSocketIfnames;
  // TORCH_NCCL_BLOCKING_WAIT (also DISTLAB_NCCL_BLOCKING_WAIT): NCCL's wait()
  // blocks the host and raises on timeout. Default false.
  bool ncclBlockingWait = false;

  // ---- the emulator ----
  // DISTLAB_SCENARIO: the scenario file a user's program runs under (`distlab
  // run` sets it; Note [Programs under a scenario] in runtime/comm/init_hook.hpp).
  // Empty: none.
  std::string scenarioFile;
  // DISTLAB_SCENARIO_RESULT_DIR: the run's folder, where each rank writes its
  // result, event log and trace. Required with DISTLAB_SCENARIO.
  std::string scenarioResultDir;
  // DISTLAB_SCENARIO_TRACE: record the rank's trace even when the scenario does
  // not ask for it (`distlab run --trace`). Default false.
  bool scenarioTrace = false;
  // PATH: where `distlab bench --peers` looks for mpirun and python3; unset:
  // "/usr/bin:/bin". Nothing in runtime/ uses it.
  std::optional<std::string> path;

  // RANK / WORLD_SIZE / MASTER_PORT, or ValueError "environment variable RANK
  // is not set; set it to an integer in [0, 2147483647]".
  int requiredRank() const;
  int requiredWorldSize() const;
  int requiredMasterPort() const;
};

// Reads every variable of kRuntimeEnvVars. Throws ValueError for the first bad
// value (in the table's order) naming the variable, the value and what is
// allowed. Thread-safe as getenv is (no concurrent setenv).
RuntimeEnv readRuntimeEnv();

// One variable on its own, validated as readRuntimeEnv() does: for the
// process-wide diagnostics, whose start-up read must not fail on another
// variable's bad value (logging.cpp, debug_level.cpp).
DebugLevel readDistributedDebugEnv();   // TORCH_DISTRIBUTED_DEBUG
LogLevel readCppLogLevelEnv();          // TORCH_CPP_LOG_LEVEL
std::optional<int> readRankEnv();       // RANK

// Splits "eth0, eth1" into {"eth0", "eth1"} (GLOO_SOCKET_IFNAME and the gloo.socket_ifname
// option); throws ValueError naming `what` for an empty list or an empty entry.
std::vector<std::string> parseIfnameList(std::string_view text, std::string_view what);

// One row per variable; a second spelling shares its row (`meaning` says
// which one wins).
struct EnvVarInfo {
  std::string_view name;       // "TORCH_FR_BUFFER_SIZE"
  std::string_view alsoRead;   // the other spelling, "" if none
  std::string_view meaning;
  std::string_view defaultValue;
  std::string_view allowed;
  std::string_view usedBy;     // the component that takes the setting
};

inline constexpr std::array<EnvVarInfo, 22> kRuntimeEnvVars{{
    {"TORCH_DISTRIBUTED_DEBUG", "", "debug level: DDP logs, unused-parameter names, DETAIL checks",
     "OFF", "OFF, INFO, DETAIL (any case)", "debug level (first use), DETAIL wrapper, DDP"},
    {"TORCH_CPP_LOG_LEVEL", "", "C++ log level, combined with the debug level", "WARNING",
     "TRACE, DEBUG, INFO, WARNING, ERROR, FATAL (any case)", "logging (first use)"},
    {"RANK", "", "global rank of this process", "unset", "integer in [0, 2147483647]",
     "env:// rendezvous, log line prefix, scenario worker"},
    {"WORLD_SIZE", "", "number of processes", "unset", "integer in [1, 2147483647]",
     "env:// rendezvous, scenario worker"},
    {"MASTER_ADDR", "", "address of rank 0's store", "unset (rank 0: 127.0.0.1)",
     "host name or address", "env:// rendezvous, DDP logging data"},
    {"MASTER_PORT", "", "port of rank 0's store", "unset", "integer in [1, 65535]",
     "env:// rendezvous, DDP logging data"},
    {"DISTLAB_STORE_EXTERNAL", "", "a store server already runs there; rank 0 connects too",
     "false", "1/0, true/false, yes/no, on/off", "env:// and tcp:// rendezvous"},
    {"DISTLAB_STORE_PREFIX", "", "key prefix of the env:// store (one per restart round)",
     "empty (none)", "any text", "env:// rendezvous"},
    {"DISTLAB_LAUNCH_RELEASE_FD", "", "pipe the launcher closes once every rank is started",
     "unset (no wait)", "integer in [0, 2147483647]: an inherited descriptor",
     "env:// rendezvous"},
    {"DDP_SET_LAST_BUCKET_CAP", "", "rebuilt buckets: the small cap goes to the last bucket",
     "false", "1/0, true/false, yes/no, on/off", "Reducer (ReducerOptions)"},
    {"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE",
     "flight-recorder entries per group; 0 disables (the older spelling is read when unset)",
     "2000", "integer in [0, 1073741824]", "flight recorder (monitor decorator)"},
    {"TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
     "dump file prefix, then '<global rank>.json' (the older spelling is read when unset)",
     "/tmp/distlab_fr_rank_", "a path prefix; empty means the default",
     "flight recorder (monitor decorator)"},
    {"DISTLAB_DETAIL_EXCHANGE", "", "how DETAIL's fingerprints travel", "backend",
     "backend, store (any case)", "DETAIL wrapper"},
    {"DISTLAB_WATCHDOG", "", "the watchdog watches new groups", "true",
     "1/0, true/false, yes/no, on/off", "watchdog (monitor decorator)"},
    {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "DISTLAB_ASYNC_ERROR_HANDLING",
     "after a watchdog timeout: 0 nothing, 1 abort and exit, 2 abort, 3 exit "
     "(DISTLAB_ASYNC_ERROR_HANDLING wins)",
     "2",
     "integer in [0, 3]", "watchdog (monitor decorator)"},
    {"DISTLAB_FR_DUMP_SIGNAL", "", "signal that makes the watchdog dump", "USR2",
     "USR1, USR2, OFF (any case)", "watchdog (its first start)"},
    {"GLOO_SOCKET_IFNAME", "", "interfaces Gloo binds to, round-robin", "unset (host default)",
     "comma-separated interface names", "gloo backend (after option gloo.socket_ifname)"},
    {"TORCH_NCCL_BLOCKING_WAIT", "DISTLAB_NCCL_BLOCKING_WAIT",
     "NCCL wait() blocks the host and raises on timeout (the DISTLAB_ spelling is read "
     "when unset)",
     "false",
     "1/0, true/false, yes/no, on/off", "nccl backend (after option nccl.blocking_wait)"},
    {"DISTLAB_SCENARIO", "", "the scenario a user's program runs under (set by `distlab run`)",
     "unset (none)", "a scenario file's path", "initProcessGroup's init hook (distlab::program)"},
    {"DISTLAB_SCENARIO_RESULT_DIR", "", "the run's folder for rank results, events and traces",
     "unset (required with DISTLAB_SCENARIO)", "an existing folder",
     "initProcessGroup's init hook (distlab::program)"},
    {"DISTLAB_SCENARIO_TRACE", "", "record the rank's trace even if the scenario does not ask",
     "false", "1/0, true/false, yes/no, on/off", "initProcessGroup's init hook (distlab::program)"},
    {"PATH", "", "where `distlab bench --peers` finds mpirun and python3", "/usr/bin:/bin",
     "a ':' list of folders", "emulator bench only"},
}};

}  // namespace distlab
