#include "emulator/launcher/launch_options.hpp"

#include <fmt/format.h>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

[[noreturn]] void bad(const char* flag, const std::string& what) {
  throw ValueError(fmt::format("{}: {}", flag, what));
}

}  // namespace

void validateLaunchOptions(const LaunchOptions& o) {
  if (o.nprocPerNode < 1 || o.nprocPerNode > 4096) {
    bad("--nproc-per-node", fmt::format("{} is invalid; give the number of ranks per node "
                                        "(1..4096)", o.nprocPerNode));
  }
  if (o.nnodes < 1 || o.nnodes > 4096) {
    bad("--nnodes", fmt::format("{} is invalid; give the number of nodes (1..4096)", o.nnodes));
  }
  if (o.nodeRank < 0 || o.nodeRank >= o.nnodes) {
    bad("--node-rank", fmt::format("{} is invalid; it must lie in [0, --nnodes={})", o.nodeRank,
                                   o.nnodes));
  }
  if (o.masterAddr.empty()) bad("--master-addr", "is empty; give node 0's address");
  if (o.masterPort < 0 || o.masterPort > 65535) {
    bad("--master-port", fmt::format("{} is out of range; use 1..65535, or 0 for a free port",
                                     o.masterPort));
  }
  if (o.masterPort == 0 && o.nnodes > 1) {
    bad("--master-port", "0 (pick a free port) only works with --nnodes 1: the other nodes "
                         "need to know the port; give a fixed port");
  }
  if (o.maxRestarts < 0) {
    bad("--max-restarts", fmt::format("{} is negative; use 0 or more", o.maxRestarts));
  }
  if (o.monitorInterval.count() <= 0) bad("--monitor-interval", "must be positive");
  if (o.runId.empty()) bad("--run-id", "is empty; give a job id (default 'none')");
  for (char c : o.runId) {
    if (c == '/' || c == ' ' || static_cast<unsigned char>(c) < 0x20) {
      bad("--run-id", fmt::format("'{}' may not contain '/', spaces or control characters",
                                  o.runId));
    }
  }
  if (o.timeout.count() < 0) bad("--timeout", "is negative; use seconds > 0, or 0 for none");
  if (o.stopGracePeriod.count() < 0) bad("--stop-grace", "is negative");
  if (o.failureGrace.count() < 0) {
    bad("--failure-grace", "is negative; use seconds >= 0 (0 stops the others at once)");
  }
  if (o.rendezvousTimeout.count() <= 0) bad("--rdzv-timeout", "must be positive");
  if (o.program.empty() || o.program.front().empty()) {
    bad("program", "missing; usage: distlab launch [flags] PROGRAM [ARGS...]");
  }
}

}  // namespace distlab::emulator
