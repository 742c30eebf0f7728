// `distlab bench scale` (scale_bench.hpp): one rank's sequence, the cross-rank
// reductions of its timings, and rank 0's table and JSON.
#include "emulator/bench/scale_bench.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "emulator/bench/collectives_bench.hpp"
#include "runtime/comm/debug/monitored_barrier.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/debug_level.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab::emulator {
namespace {

using comm::ProcessGroup;
using comm::ProcessGroupPtr;
using nlohmann::json;

double unixNowS() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A process's start as Unix time: /proc/<pid>/stat field 22 (clock ticks
// after boot) plus the boot time from /proc/stat. Throws Error when either
// cannot be read (the parent exited, no /proc).
double processStartUnixS(pid_t pid) {
  std::ifstream statFile(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(statFile)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');  // the command name may hold spaces and ')'
  std::istringstream fields(paren == std::string::npos ? "" : stat.substr(paren + 2));
  std::string field;
  // After the name: field 3 (state) is the first; starttime is field 22.
  for (int i = 3; i < 22 && fields >> field;) ++i;
  uint64_t ticks = 0;
  if (!(fields >> ticks)) throw Error(fmt::format("bench scale: cannot read /proc/{}/stat", pid));
  std::ifstream procStat("/proc/stat");
  uint64_t bootTime = 0;
  for (std::string key; procStat >> key;) {
    if (key == "btime" && procStat >> bootTime) break;
  }
  if (bootTime == 0) throw Error("bench scale: no btime in /proc/stat");
  return static_cast<double>(bootTime) + static_cast<double>(ticks) / sysconf(_SC_CLK_TCK);
}

// Element-wise maximum over the group's ranks (negate an entry for a minimum).
std::vector<double> maxOverRanks(ProcessGroup& g, const std::vector<double>& values) {
  Tensor t = empty({static_cast<int64_t>(values.size())}, TensorOptions{DType::kFloat64});
  std::copy(values.begin(), values.end(), t.data<double>());
  g.allreduce(t, {.reduceOp = comm::ReduceOp::kMax, .asyncOp = false})->wait();
  return {t.data<double>(), t.data<double>() + values.size()};
}

struct Row {
  std::string op;
  uint64_t bytes = 0;
  std::string debug;  // "monitor" (the default group) or "detail"
  double p50Us = 0;
  double avgUs = 0;
  int iters = 0;
};

// Times `op` as the bench collectives does: per iteration the slowest rank.
Row timeRow(ProcessGroup& g, const ScaleBenchOptions& o, Row row,
            const std::function<void()>& op) {
  for (int i = 0; i < o.warmup; ++i) op();
  g.barrier({.asyncOp = false})->wait();
  std::vector<double> local(o.iters);
  for (int i = 0; i < o.iters; ++i) {
    const int64_t start = monotonicNowNs();
    op();
    local[i] = static_cast<double>(monotonicNowNs() - start) / 1e3;
  }
  std::vector<double> slowest = maxOverRanks(g, local);
  double sum = 0;
  for (double t : slowest) sum += t;
  row.avgUs = sum / o.iters;
  std::nth_element(slowest.begin(), slowest.begin() + o.iters / 2, slowest.end());
  row.p50Us = slowest[o.iters / 2];
  row.iters = o.iters;
  return row;
}

// An all_reduce of `count` ones, checked: every element must equal the size.
// Returns false for a wrong sum (the bench then exits 1).
bool allreduceOnes(ProcessGroup& g, Tensor& t) {
  std::fill_n(t.data<float>(), t.numel(), 1.0f);
  g.allreduce(t, {.asyncOp = false})->wait();
  const float* p = t.data<float>();
  return std::all_of(p, p + t.numel(), [&](float v) { return v == static_cast<float>(g.size()); });
}

struct Results {
  json figures = json::object();
  std::vector<Row> rows;
  bool correct = true;
};

void timeGroup(ProcessGroup& g, const std::string& debug, const ScaleBenchOptions& o,
               Results& r) {
  Tensor small = empty({2}, TensorOptions{DType::kFloat32});       // 8 B
  Tensor large = empty({1 << 18}, TensorOptions{DType::kFloat32});  // 1 MiB
  r.correct &= allreduceOnes(g, small) && allreduceOnes(g, large);
  const auto allreduce = [&g](Tensor& t) {
    return [&g, &t] { g.allreduce(t, {.asyncOp = false})->wait(); };
  };
  r.rows.push_back(timeRow(g, o, {"all_reduce", 8, debug}, allreduce(small)));
  r.rows.push_back(timeRow(g, o, {"all_reduce", 1 << 20, debug}, allreduce(large)));
  r.rows.push_back(timeRow(g, o, {"barrier", 0, debug},
                           [&g] { g.barrier({.asyncOp = false})->wait(); }));
}

// Creates a group with `make`, runs one checked all_reduce on it (members
// only) and returns the slowest rank's seconds for both.
double timeGroupCreation(ProcessGroup& world, Results& r,
                         const std::function<ProcessGroupPtr()>& make) {
  const int64_t start = monotonicNowNs();
  ProcessGroupPtr group = make();
  if (group->isMember()) {
    Tensor t = empty({1}, TensorOptions{DType::kFloat32});
    r.correct &= allreduceOnes(*group, t);
  }
  const double local = static_cast<double>(monotonicNowNs() - start) / 1e9;
  return maxOverRanks(world, {local})[0];
}

// newSubgroups' size at this world size; checked before any rank joins.
int subgroupSizeFor(const ScaleBenchOptions& o, int worldSize) {
  const int sub = std::min(o.subgroupSize, worldSize);
  if (worldSize % sub != 0) {
    throw ValueError(fmt::format("--subgroup-size {} does not divide the world size {}; give one "
                                 "that does", o.subgroupSize, worldSize));
  }
  return sub;
}

void createGroups(ProcessGroup& world, const ScaleBenchOptions& o, Results& r) {
  const int sub = subgroupSizeFor(o, world.size());
  r.figures["subgroup_size"] = sub;
  r.figures["new_subgroups_s"] = timeGroupCreation(world, r, [sub] {
    return comm::newSubgroups(sub).first;
  });
  std::vector<int> lowerHalf(std::max(1, world.size() / 2));
  for (size_t i = 0; i < lowerHalf.size(); ++i) lowerHalf[i] = static_cast<int>(i);
  r.figures["split_half_s"] = timeGroupCreation(world, r, [&] {
    return world.split(lowerHalf, "bench_scale_half");
  });
}

void printResults(std::ostream& out, const Results& r, int world, const std::string& backend) {
  const json& f = r.figures;
  out << fmt::format("# distlab bench scale: world size {}, backend {}, launched processes\n",
                     world, backend);
  out << fmt::format("spawn (launcher start -> last rank started)        {:>10.3f} s\n",
                     f["spawn_s"].get<double>());
  out << fmt::format("group formed (launcher start -> last rank's init)  {:>10.3f} s  "
                     "(first to last rank {:.3f} s)\n",
                     f["formed_s"].get<double>(), f["formed_spread_s"].get<double>());
  out << fmt::format("first collective (all_reduce 4 B, slowest rank)    {:>10.3f} ms\n",
                     f["first_collective_s"].get<double>() * 1e3);
  for (const char* key : {"detail_group_s", "new_subgroups_s", "split_half_s"}) {
    out << fmt::format("{:<50} {:>10.3f} ms\n", fmt::format("{} (slowest rank)", key),
                       f[key].get<double>() * 1e3);
  }
  out << fmt::format("{:>18} {:>10} {:>8} {:>6} {:>12} {:>12}\n", "op", "bytes", "debug",
                     "iters", "p50 us", "avg us");
  for (const Row& row : r.rows) {
    out << fmt::format("{:>18} {:>10} {:>8} {:>6} {:>12.1f} {:>12.1f}\n", row.op, row.bytes,
                       row.debug, row.iters, row.p50Us, row.avgUs);
  }
  out << (r.correct ? "# sums checked: OK\n" : "# sums checked: WRONG\n");
}

json resultsJson(const Results& r, int world, const ScaleBenchOptions& o) {
  json j = r.figures;
  j["world_size"] = world;
  j["backend"] = o.backend;
  j["correct"] = r.correct;
  j["rows"] = json::array();
  for (const Row& row : r.rows) {
    j["rows"].push_back({{"op", row.op}, {"bytes", row.bytes}, {"debug", row.debug},
                         {"iters", row.iters}, {"p50_us", row.p50Us}, {"avg_us", row.avgUs}});
  }
  return j;
}

void validate(const ScaleBenchOptions& o) {
  if (o.iters < 1 || o.iters > 100000 || o.warmup < 0 || o.warmup > 100000) {
    throw ValueError(fmt::format("--iters {} / --warmup {}: need 1..100000 and 0..100000",
                                 o.iters, o.warmup));
  }
  if (o.timeoutS < 1 || o.timeoutS > 86400) {
    throw ValueError(fmt::format("--timeout {} must be in 1..86400 seconds", o.timeoutS));
  }
  if (o.subgroupSize < 1) {
    throw ValueError(fmt::format("--subgroup-size {} must be at least 1", o.subgroupSize));
  }
}

}  // namespace

int runScaleBench(const ScaleBenchOptions& o, std::ostream& out) {
  validate(o);
  const RuntimeEnv env = readRuntimeEnv();
  if (!env.rank || !env.worldSize) {
    throw ValueError("bench scale runs as the ranks of a job: `distlab launch "
                     "--nproc-per-node N distlab bench scale ...` (RANK and WORLD_SIZE unset)");
  }
  subgroupSizeFor(o, *env.worldSize);
  const double launcherStart = processStartUnixS(getppid());
  const double ownStart = processStartUnixS(getpid());
  comm::initProcessGroup({.backend = o.backend,
                          .timeout = std::chrono::seconds(o.timeoutS)});
  const double formed = unixNowS();
  ProcessGroupPtr world = comm::defaultGroup();
  Results r;
  Tensor first = empty({1}, TensorOptions{DType::kFloat32});
  const int64_t firstStart = monotonicNowNs();
  r.correct &= allreduceOnes(*world, first);
  const double firstS = static_cast<double>(monotonicNowNs() - firstStart) / 1e9;
  const std::vector<double> m =
      maxOverRanks(*world, {ownStart, formed, -formed, firstS});
  r.figures["spawn_s"] = m[0] - launcherStart;
  r.figures["formed_s"] = m[1] - launcherStart;
  r.figures["formed_spread_s"] = m[1] + m[2];
  r.figures["first_collective_s"] = m[3];
  warmUpGroup(*world, Device::cpu());  // after the first collective, which is timed cold
  timeGroup(*world, "monitor", o, r);
  r.rows.push_back(timeRow(*world, o, {"monitored_barrier", 0, "monitor"},
                           [&world] { comm::monitoredBarrier(world); }));
  ProcessGroupPtr detail;
  const DebugLevel level = debugLevel();
  r.figures["detail_group_s"] = timeGroupCreation(*world, r, [&detail] {
    setDebugLevel(DebugLevel::kDetail);  // the wrapper is chosen at the group's creation
    detail = comm::newGroup({.groupDesc = "bench_scale_detail"});
    return detail;
  });
  setDebugLevel(level);
  warmUpGroup(*detail, Device::cpu());
  timeGroup(*detail, "detail", o, r);
  createGroups(*world, o, r);
  // Whether every rank's sums held: one rank's wrong result fails the bench.
  r.correct = maxOverRanks(*world, {r.correct ? 0.0 : 1.0})[0] == 0.0;
  const bool leader = world->rank() == 0;
  detail.reset();
  world.reset();
  comm::destroyProcessGroup();
  if (leader) {
    printResults(out, r, static_cast<int>(*env.worldSize), o.backend);
    if (!o.jsonPath.empty()) std::ofstream(o.jsonPath) << resultsJson(r, *env.worldSize, o).dump(2) << "\n";
  }
  return r.correct ? 0 : 1;
}

}  // namespace distlab::emulator
