// `distlab launch`: torchrun-style launcher (emulator/launcher/launcher.hpp).
//
//   distlab launch --nproc-per-node 4 ./train --steps 10
//   distlab launch --nproc-per-node 4 -- ./train --steps 10
//   distlab launch --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 --master-port 29500 ./train
//   distlab launch --scenario crash.toml ./train --steps 10
//
// --scenario runs the program once under a scenario file, as `distlab run`
// runs a kind = "program" workload: the file gives the cluster, faults and
// expectations (its [workload] may be left out), the output is the runner's
// verdict line, and the exit code the runner's (0 passed, 1 failed, 2 a bad
// file).
// Flags follow torchrun (dashes or underscores); durations are in seconds.
#include <signal.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "emulator/cli/command_registry.hpp"
#include "emulator/launcher/launcher.hpp"
#include "emulator/scenario/runner.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::cli {
namespace {

using emulator::LaunchOptions;

std::atomic<emulator::Launcher*> gLauncher{nullptr};

void forwardSignal(int sig) {
  if (emulator::Launcher* launcher = gLauncher.load()) launcher->requestStop(sig);
}

struct Seconds {
  double monitorInterval = 0.1;
  double timeout = 0;
  double stopGrace = 3;
  double failureGrace = 0;
  double rdzvTimeout = 600;
};

std::chrono::milliseconds toMs(const char* flag, double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 1e9) {
    throw ValueError(fmt::format("{}: {} is not a valid number of seconds (>= 0)", flag, seconds));
  }
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

void installSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = forwardSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

// The scenario file says the cluster: a launcher flag beside --scenario would
// be silently overridden, so it is refused.
void checkScenarioAlone(const CLI::App& sub) {
  for (const CLI::Option* o : sub.get_options()) {
    if (o->count() == 0 || o->get_name() == "--scenario" || o->get_name() == "--help") continue;
    throw ValueError(fmt::format("launch: {} cannot be combined with --scenario, whose file gives "
                                 "the cluster (world_size, backend, timeouts); change the file "
                                 "instead",
                                 o->get_name()));
  }
}

int launchUnderScenario(const CLI::App& sub, const std::string& scenario) {
  checkScenarioAlone(sub);
  emulator::RunOptions run;
  run.programCommand = programOf(sub);
  run.verbose = true;
  return emulator::runScenarios({scenario}, run);
}

std::function<int()> setupLaunch(CLI::App& sub) {
  auto options = std::make_shared<LaunchOptions>();
  auto seconds = std::make_shared<Seconds>();
  auto noStackDump = std::make_shared<bool>(false);
  auto scenario = std::make_shared<std::string>();
  sub.add_option("--scenario", *scenario,
                 "run PROGRAM under this scenario file (faults, link model, debug level, "
                 "expectations; the file gives the cluster) and print the verdict");
  sub.add_option("--nproc-per-node,--nproc_per_node", options->nprocPerNode,
                 "ranks to start on this node")->capture_default_str();
  sub.add_option("--nnodes", options->nnodes, "number of nodes")->capture_default_str();
  sub.add_option("--node-rank,--node_rank", options->nodeRank, "this node's rank")
      ->capture_default_str();
  sub.add_option("--master-addr,--master_addr", options->masterAddr, "node 0's address")
      ->capture_default_str();
  sub.add_option("--master-port,--master_port", options->masterPort,
                 "TCP store port on node 0 (0 = pick a free port, single node only)")
      ->capture_default_str();
  sub.add_option("--max-restarts,--max_restarts", options->maxRestarts,
                 "restart the whole group up to N times after a failure")->capture_default_str();
  sub.add_option("--monitor-interval,--monitor_interval", seconds->monitorInterval,
                 "seconds between health checks")->capture_default_str();
  sub.add_option("--run-id,--run_id", options->runId, "job id (TORCHELASTIC_RUN_ID)")
      ->capture_default_str();
  sub.add_option("--log-dir,--log_dir", options->logDir,
                 "tee each rank's output into <dir>/<run-id>/attempt_<n>/rank_<N>.log");
  sub.add_option("--timeout", seconds->timeout,
                 "seconds before a run is stopped with a stack dump (0 = none)")
      ->capture_default_str();
  sub.add_option("--stop-grace", seconds->stopGrace, "seconds between SIGTERM and SIGKILL")
      ->capture_default_str();
  sub.add_option("--rdzv-timeout", seconds->rdzvTimeout, "seconds for the nodes to meet")
      ->capture_default_str();
  sub.add_option("--failure-grace,--failure_grace", seconds->failureGrace,
                 "seconds the other ranks get to finish after a rank fails (0 = stop at once)")
      ->capture_default_str();
  sub.add_flag("--no-stack-dump", *noStackDump, "skip the gdb stack dump on --timeout");
  sub.prefix_command();  // PROGRAM [ARGS...] stay unparsed
  sub.footer("Usage: distlab launch [flags] [--] PROGRAM [ARGS...]");
  return [&sub, options, seconds, noStackDump, scenario]() -> int {
    if (!scenario->empty()) return launchUnderScenario(sub, *scenario);
    options->program = programOf(sub);  // Note [Program after --]
    options->monitorInterval = toMs("--monitor-interval", seconds->monitorInterval);
    options->timeout = toMs("--timeout", seconds->timeout);
    options->stopGracePeriod = toMs("--stop-grace", seconds->stopGrace);
    options->rendezvousTimeout = toMs("--rdzv-timeout", seconds->rdzvTimeout);
    options->failureGrace = toMs("--failure-grace", seconds->failureGrace);
    options->dumpStacksOnTimeout = !*noStackDump;
    emulator::Launcher launcher(*options);
    gLauncher.store(&launcher);
    installSignalHandlers();
    emulator::LaunchResult result = launcher.run();
    gLauncher.store(nullptr);
    return result.exitCode;
  };
}

CommandRegistrar registrar(Command{"launch", "start N ranks of a program (torchrun-style)",
                                   setupLaunch, /*takesProgram=*/true});

}  // namespace
}  // namespace distlab::cli
