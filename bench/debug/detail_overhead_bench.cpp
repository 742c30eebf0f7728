// DETAIL overhead per operation: the same operations on two groups of the
// same ranks, one created with TORCH_DISTRIBUTED_DEBUG=OFF and one with
// DETAIL, measured side by side in rounds that alternate which group goes
// first (docs/DESIGN.md, house style 8: ratios from one run). Ranks are forked processes on shm sharing a TCPStore.
//
//   detail_overhead_bench [--ranks 4] [--rounds 5] [--json reports/debug_overhead.json]
//
// Prints one line per (op, size): µs per op undecorated, with DETAIL, the
// difference and the ratio; writes the same as JSON when --json is given.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/common/bench_args.hpp"
#include "emulator/launcher/exit_guard.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/comm/store/tcp_store.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/debug_level.hpp"

namespace distlab {
namespace {

struct Case {
  std::string op;
  int64_t numel;
  int iters;  // per round
};

const std::vector<Case> kCases = {
    {"allreduce", 1, 400},           {"allreduce", 256, 400},
    {"allreduce", 1 << 16, 100},     {"allreduce", 1 << 22, 20},
    {"barrier", 0, 400},
};

double timeOps(comm::ProcessGroup& pg, const Case& c) {
  Tensor t = ones({std::max<int64_t>(c.numel, 1)});
  pg.barrier()->wait();
  Stopwatch watch;
  for (int i = 0; i < c.iters; ++i) {
    (c.op == "barrier" ? pg.barrier() : pg.allreduce(t))->wait();
  }
  return watch.elapsedSeconds() * 1e6 / c.iters;
}

int runRank(int rank, int world, int port, int rounds, const std::string& jsonPath) {
  auto store = std::make_shared<comm::TCPStore>(
      comm::TCPStoreOptions{.port = port, .isMaster = false, .worldSize = -1});
  setDebugLevel(DebugLevel::kOff);
  auto plain = comm::initProcessGroup(
      {.backend = "shm", .store = store, .worldSize = world, .rank = rank});
  setDebugLevel(DebugLevel::kDetail);
  auto detail = comm::newGroup({.groupDesc = "detail"});
  nlohmann::json results = nlohmann::json::array();
  if (rank == 0) {
    std::printf("DETAIL overhead, %d ranks on shm, TCPStore, median of %d rounds\n", world, rounds);
    std::printf("%-10s %10s %12s %12s %12s %8s\n", "op", "bytes", "off_us", "detail_us",
                "extra_us", "ratio");
  }
  for (const auto& c : kCases) {
    std::vector<double> off, on;
    for (int r = 0; r < rounds; ++r) {  // alternate which group goes first
      if (r % 2 == 0) off.push_back(timeOps(*plain, c));
      on.push_back(timeOps(*detail, c));
      if (r % 2 == 1) off.push_back(timeOps(*plain, c));
    }
    std::sort(off.begin(), off.end());
    std::sort(on.begin(), on.end());
    const double a = off[off.size() / 2], b = on[on.size() / 2];
    if (rank == 0) {
      std::printf("%-10s %10lld %12.1f %12.1f %12.1f %8.2f\n", c.op.c_str(),
                  static_cast<long long>(c.numel * 4), a, b, b - a, b / a);
      results.push_back({{"op", c.op}, {"bytes", c.numel * 4}, {"off_us", a}, {"detail_us", b},
                         {"extra_us", b - a}, {"ratio", b / a}});
    }
  }
  if (rank == 0 && !jsonPath.empty()) {
    nlohmann::json doc{{"benchmark", "detail_overhead_bench"},
                       {"ranks", world},
                       {"backend", "shm"},
                       {"store", "tcp"},
                       {"rounds", rounds},
                       {"statistic", "median over rounds of the mean us per op"},
                       {"results", results}};
    std::ofstream(jsonPath) << doc.dump(2) << "\n";
  }
  comm::destroyProcessGroup();
  return 0;
}

}  // namespace
}  // namespace distlab

int main(int argc, char** argv) {
  int world = 4, rounds = 5;
  std::string json;
  CLI::App app{"TORCH_DISTRIBUTED_DEBUG=DETAIL overhead, side by side with OFF",
               "detail_overhead_bench"};
  app.add_option("--ranks", world, "ranks (forked processes)")
      ->check(CLI::Range(2, 64))->capture_default_str();
  app.add_option("--rounds", rounds, "rounds (median reported)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--json", json, "also write the results as JSON here");
  distlab::bench::parseBenchArgs(app, argc, argv);
  if (!json.empty()) distlab::bench::requireWritable(app, "--json", json);
  // Before the store's threads: the ranks form one process group that never
  // outlives the bench (emulator/launcher/exit_guard.hpp).
  distlab::emulator::ExitGuard::instance();
  distlab::comm::TCPStore server(
      {.port = 0, .isMaster = true, .worldSize = -1, .waitForWorkers = false});
  std::vector<pid_t> kids;
  pid_t group = 0;
  for (int r = 0; r < world; ++r) {
    pid_t pid = distlab::emulator::forkGuardedRank(group);
    if (pid == 0) {
      int code = 1;
      try {
        code = distlab::runRank(r, world, server.port(), rounds, json);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      }
      std::fflush(stdout);
      _exit(code);
    }
    kids.push_back(pid);
  }
  int failed = 0;
  for (size_t i = 0; i < kids.size(); ++i) {
    int status = 0;
    waitpid(kids[i], &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    distlab::emulator::releaseGuardedRank(kids[i], group, i + 1 == kids.size());
  }
  return failed ? 1 : 0;
}
