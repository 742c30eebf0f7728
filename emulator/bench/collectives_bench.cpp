// `distlab bench collectives`: rank orchestration (fork or launched), memcpy
// baseline, the nccl-tests tables, backend ratios and the JSON report.
#include "emulator/bench/collectives_bench.hpp"

#include <sys/wait.h>
#include <csignal>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "emulator/bench/bench_rounds.hpp"
#include "emulator/bench/nccl_tests_output.hpp"
#include "emulator/bench/peer_bench.hpp"
#include "emulator/launcher/exit_guard.hpp"
#include "runtime/comm/backends/shm/shm_segment.hpp"
#include "runtime/comm/backend_options.hpp"
#include "runtime/comm/backend_registry.hpp"
#include "runtime/comm/debug/debug_install.hpp"
#include "runtime/comm/group_management.hpp"
#include "runtime/comm/op_names.hpp"
#include "runtime/comm/store/file_store.hpp"
#include "runtime/core/clock.hpp"
#include "runtime/core/debug_level.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/core/runtime_env.hpp"

namespace distlab::emulator {
namespace {

using json = nlohmann::json;

// A peer runs the whole sweep in one process tree; 64 MiB x 5 ops at world 4
// took under 2 minutes here.
constexpr std::chrono::seconds kPeerLimit{900};

// What --ops took before the bench used PyTorch's names, for an error that
// gives the new one. The bench always timed the flat-tensor forms. (Its
// "reduce_scatter" is PyTorch's list form now, an op of its own.)
constexpr std::array<std::pair<std::string_view, comm::OpType>, 3> kOldBenchOps = {{
    {"allreduce", comm::OpType::kAllreduce},
    {"allgather", comm::OpType::kAllgatherBase},
    {"alltoall", comm::OpType::kAlltoallBase},
}};

// Throws ValueError naming the flag for an op the bench does not run.
void checkBenchOp(const std::string& op) {
  for (const auto& [old, type] : kOldBenchOps) {
    if (op == old) {
      throw ValueError(
          fmt::format("--ops: \"{}\" is spelled \"{}\" (PyTorch's name)", op, comm::apiName(type)));
    }
  }
  if (std::find(kBenchOps.begin(), kBenchOps.end(), op) == kBenchOps.end()) {
    throw ValueError(
        fmt::format("--ops: unknown collective '{}'; use {}", op, fmt::join(kBenchOps, ",")));
  }
}

json busBandwidthFactors(int worldSize) {
  json factors = json::object();
  for (const auto& op : kBenchOps) factors[op] = busBandwidthFactor(op, worldSize);
  return factors;
}

}  // namespace

json benchRowToJson(const BenchRow& r) {
  return json{{"backend", r.backend}, {"mode", r.mode}, {"op", r.op},         {"bytes", r.bytes},
              {"count", r.count},     {"type", "float32"},
              {"redop", benchOpReduces(r.op) ? "sum" : "none"},
              {"iters", r.iters},     {"time_p50_us", r.p50Us}, {"time_avg_us", r.avgUs},
              {"algbw_GBps", r.algbwGBps}, {"busbw_GBps", r.busbwGBps}, {"wrong", r.wrong},
              {"checked", r.checked}, {"rank_mean_us", {{"rank0", r.rank0MeanUs},
                                                        {"avg", r.rankMeanAvgUs},
                                                        {"min", r.rankMeanMinUs},
                                                        {"max", r.rankMeanMaxUs}}},
              {"error", r.error}, {"debug", r.debug}, {"time_p50_us_rounds", r.roundP50Us}};
}

BenchRow benchRowFromJson(const json& j) {
  BenchRow r;
  r.backend = j["backend"];
  r.mode = j.value("mode", "blocking");
  r.op = j["op"];
  r.bytes = j["bytes"];
  r.count = j["count"];
  r.iters = j["iters"];
  r.p50Us = j["time_p50_us"];
  r.avgUs = j["time_avg_us"];
  r.algbwGBps = j["algbw_GBps"];
  r.busbwGBps = j["busbw_GBps"];
  r.wrong = j["wrong"];
  r.checked = j.value("checked", true);
  if (j.contains("rank_mean_us")) {  // a peer's row has none (Note [nccl-tests output])
    const json& m = j["rank_mean_us"];
    r.rank0MeanUs = m["rank0"];
    r.rankMeanAvgUs = m["avg"];
    r.rankMeanMinUs = m["min"];
    r.rankMeanMaxUs = m["max"];
  }
  r.error = j["error"];
  r.debug = j.value("debug", "");
  r.roundP50Us = j.value("time_p50_us_rounds", std::vector<double>{});
  return r;
}

namespace {

// The name of the rows of `backend` measured with the layers `debug`.
std::string seriesName(const std::string& backend, const std::string& debug) {
  return debug == "off" ? backend : backend + "+" + debug;
}

// Makes the groups created from now on carry the debug layers `debug` names
// (CollectivesBenchOptions::debug), as initProcessGroup would install them.
void installDebugLayers(const std::string& debug) {
  if (debug == "off") return;
  setDebugLevel(debug == "detail" ? DebugLevel::kDetail : DebugLevel::kOff);
  comm::installDebugDecorators();
}

const char* debugTitle(const std::string& debug) {
  if (debug == "monitor") return "monitor (flight recorder + watchdog)";
  if (debug == "detail") return "detail (flight recorder + watchdog + DETAIL collective checks)";
  if (debug == "init_process_group") {
    return "as initProcessGroup installs them (TORCH_DISTRIBUTED_DEBUG, TORCH_FR_BUFFER_SIZE, "
           "DISTLAB_WATCHDOG)";
  }
  return "off (no flight recorder, watchdog or DETAIL checks)";
}

// Forks worldSize ranks for one backend; rank 0 writes its rows to `resultPath`.
// `series` names the rows (seriesName()), `debug` the layers the groups carry.
std::vector<BenchRow> runForked(const std::string& backend, const std::string& debug,
                                const std::string& series, const CollectivesBenchOptions& o,
                                const std::string& dir) {
  const std::string storePath = dir + "/store_" + series;
  const std::string resultPath = dir + "/rows_" + series + ".json";
  std::vector<pid_t> pids;
  pid_t rankGroup = 0;  // the ranks' process group (Note [Exit guard])
  for (int rank = 0; rank < o.worldSize; ++rank) {
    const pid_t pid = forkGuardedRank(rankGroup);
    if (pid == 0) {
      int code = 0;
      try {
        comm::ProcessGroupConfig config;
        config.store = std::make_shared<comm::FileStore>(storePath, o.worldSize);
        config.rank = rank;
        config.size = o.worldSize;
        config.name = "bench_" + backend;
        config.timeout = std::chrono::seconds(120);
        config.backendSpec = backend;
        installDebugLayers(debug);
        auto group = comm::createProcessGroup(config, o.backendOptions);
        auto rows = benchRank(*group, series, o);
        for (auto& r : rows) r.debug = debug;
        if (rank == 0) {
          json out = json::array();
          for (const auto& r : rows) out.push_back(benchRowToJson(r));
          std::ofstream(resultPath) << out.dump();
        }
        group->shutdown(std::chrono::seconds(5));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "bench: rank %d (%s): %s\n", rank, backend.c_str(), e.what());
        code = 1;
      }
      std::fflush(nullptr);
      _exit(code);
    }
    pids.push_back(pid);
  }
  bool failed = false;
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed = true;
      kill(-rankGroup, SIGKILL);  // never leave a rank behind
    }
    releaseGuardedRank(pids[i], rankGroup, i + 1 == pids.size());
  }
  if (failed) throw DistBackendError("bench: a rank of series " + series + " failed");
  std::ifstream in(resultPath);
  json rows = json::parse(in);
  std::vector<BenchRow> out;
  for (const auto& j : rows) out.push_back(benchRowFromJson(j));
  return out;
}

// One round (Note [Bench rounds]): every distlab series (backend x debug
// layers) and every peer, in its own directory; even rounds run the series
// first, odd rounds the peers.
SeriesRows sweepRound(const CollectivesBenchOptions& o, int round, const std::string& dir) {
  const std::string roundDir = dir + "/round" + std::to_string(round);
  std::filesystem::create_directory(roundDir);
  SeriesRows rows;
  const auto runSeries = [&] {
    for (const auto& b : o.backends) {
      for (const auto& d : o.debug) {
        const std::string name = seriesName(b, d);
        rows[name] = runForked(b, d, name, o, roundDir);
      }
    }
  };
  const auto runPeers = [&] {
    for (const auto& p : o.peers) rows[p] = runPeerBench(p, o, roundDir, kPeerLimit);
  };
  if (round % 2 == 0) {
    runSeries();
    runPeers();
  } else {
    runPeers();
    runSeries();
  }
  return rows;
}

std::string human(uint64_t bytes) {
  if (bytes >= (1ull << 20)) return fmt::format("{}M", bytes >> 20);
  if (bytes >= 1024) return fmt::format("{}K", bytes >> 10);
  return fmt::format("{}", bytes);
}

const char* modeTitle(const std::string& mode) {
  return mode == "async" ? "asynchronous path (asyncOp=true, then Work::wait: progress thread)"
                         : "blocking path (asyncOp=false: inline on the caller)";
}

void printTable(std::ostream& out, const std::string& backend, const std::string& mode,
                const std::vector<BenchRow>& rows, const CollectivesBenchOptions& o) {
  out << fmt::format("#\n# backend {}  {}\n# world size {}  type float32  redop sum (where it "
                     "reduces)  warmup {}  iters {}\n",
                     backend, modeTitle(mode), o.worldSize, o.warmup,
                     o.iters > 0 ? std::to_string(o.iters) : "auto");
  if (!rows.empty() && !rows.front().debug.empty()) {  // a distlab series, not a peer
    out << fmt::format("# debug layers: {}\n", debugTitle(rows.front().debug));
  }
  std::string lastOp;
  for (const auto& r : rows) {
    if (r.mode != mode) continue;
    if (r.op != lastOp) {
      lastOp = r.op;
      out << fmt::format("#\n# {}  (busbw factor {:.3f})\n", r.op,
                         busBandwidthFactor(r.op, o.worldSize));
      out << fmt::format("# {:>10} {:>12} {:>7} {:>6} {:>12} {:>12} {:>10} {:>10} {:>7}\n",
                         "size(B)", "count", "type", "redop", "time_p50(us)", "time_avg(us)",
                         "algbw", "busbw", "#wrong");
    }
    if (!r.error.empty()) {
      out << fmt::format("  {:>10}  unsupported: {}\n", human(r.bytes), r.error);
      continue;
    }
    out << fmt::format(
        "  {:>10} {:>12} {:>7} {:>6} {:>12.2f} {:>12.2f} {:>10.3f} {:>10.3f} {:>7}\n", r.bytes,
        r.count, "float", benchOpReduces(r.op) ? "sum" : "none", r.p50Us, r.avgUs, r.algbwGBps,
        r.busbwGBps, r.checked ? std::to_string(r.wrong) : std::string("N/A"));
  }
}

// One ratio table: `num` rows (of `numMode`) over the matching `den` rows; with
// rounds, the median of the per-round ratios and their range (Note [Bench rounds]).
void printRatioTable(std::ostream& out, const std::string& title, const std::string& numName,
                     const std::vector<BenchRow>& num, const std::string& numMode,
                     const std::string& denName, const std::vector<BenchRow>& den,
                     const std::string& denMode, int rounds) {
  out << fmt::format("#\n# {}\n", title);
  out << fmt::format("# {:>16} {:>10} {:>14} {:>14} {:>8}", "op", "size(B)", numName + "(us)",
                     denName + "(us)", "ratio");
  out << (rounds > 1 ? fmt::format(" {:>8} {:>8}   (over {} rounds)\n", "min", "max", rounds)
                     : std::string("\n"));
  for (const auto& a : num) {
    if (a.mode != numMode || !a.error.empty()) continue;
    for (const auto& b : den) {
      if (b.mode == denMode && b.op == a.op && b.bytes == a.bytes && b.error.empty()) {
        const RoundRatio r = roundRatio(a, b);
        out << fmt::format("  {:>16} {:>10} {:>14.2f} {:>14.2f} {:>8.2f}", a.op, a.bytes,
                           a.p50Us, b.p50Us, r.median);
        out << (rounds > 1 ? fmt::format(" {:>8.2f} {:>8.2f}\n", r.min, r.max)
                           : std::string("\n"));
      }
    }
  }
}

std::vector<std::string> modesOf(const CollectivesBenchOptions& o) {
  return o.async ? std::vector<std::string>{"blocking", "async"}
                 : std::vector<std::string>{"blocking"};
}

void printRatios(std::ostream& out, const std::map<std::string, std::vector<BenchRow>>& all,
                 const CollectivesBenchOptions& o) {
  const std::string& base = o.backends[0];
  for (const auto& mode : modesOf(o)) {
    for (size_t b = 1; b < o.backends.size(); ++b) {
      const std::string& other = o.backends[b];
      printRatioTable(out, fmt::format("time ratio {}/{}, {} path (p50; < 1: {} is faster)", other,
                                       base, mode, other),
                      other, all.at(other), mode, base, all.at(base), mode, o.rounds);
    }
  }
  // Peers run their blocking calls; each distlab path is compared with them.
  for (const auto& peer : o.peers) {
    for (const auto& b : o.backends) {
      for (const auto& mode : modesOf(o)) {
        printRatioTable(out, fmt::format("time ratio distlab {} {} path / {} (p50; <= 1: distlab "
                                         "is no slower)", b, mode, peer),
                        b, all.at(b), mode, peer, all.at(peer), "blocking", o.rounds);
      }
    }
  }
}

void validate(const CollectivesBenchOptions& o) {
  if (o.worldSize < 1 || o.worldSize > comm::shm::kMaxWorldSize) {
    throw ValueError(fmt::format("--world-size {} must be in 1..{} (the shm backend's segments "
                                 "hold at most {} ranks)", o.worldSize, comm::shm::kMaxWorldSize,
                                 comm::shm::kMaxWorldSize));
  }
  if (o.minBytes < 1 || o.maxBytes < o.minBytes || o.maxBytes > kMaxBenchBytes) {
    throw ValueError(fmt::format("--min-bytes {} / --max-bytes {}: need 1 <= min <= max <= {}",
                                 o.minBytes, o.maxBytes, kMaxBenchBytes));
  }
  if (o.rounds < 1 || o.rounds > 100) {
    throw ValueError(fmt::format("--rounds {} must be in 1..100", o.rounds));
  }
  if (o.average < 0 || o.average > 3) {
    throw ValueError(fmt::format("--average {}: use 0 (rank 0), 1 (mean over ranks), 2 (minimum) "
                                 "or 3 (maximum), as nccl-tests' -a", o.average));
  }
  if (o.iters < 0 || o.iters > 1000000 || o.warmup < 0 || o.warmup > 1000000) {
    throw ValueError(fmt::format("--iters {} / --warmup {}: need 0..1000000", o.iters, o.warmup));
  }
  if (o.backends.empty()) throw ValueError("--backend: give at least one backend");
  for (const auto& b : o.backends) comm::lookupBackend(b);  // ValueError naming the choices
  if (o.ops.empty()) throw ValueError("--ops: give at least one collective");
  for (const auto& op : o.ops) checkBenchOp(op);
  for (const auto& peer : o.peers) checkPeerAvailable(peer);
  if (o.debug.empty()) throw ValueError("--debug: give at least one of off, monitor, detail");
  for (const auto& d : o.debug) {
    if (d != "off" && d != "monitor" && d != "detail") {
      throw ValueError(fmt::format("--debug '{}': use off, monitor or detail", d));
    }
  }
  try {
    comm::validateBackendOptions(o.backendOptions);  // before any rank is forked
  } catch (const ValueError& e) {
    throw ValueError(std::string("--option: ") + e.what());
  }
}

}  // namespace

const std::vector<std::string> kBenchOps = benchOpNames();

double measureMemcpyGBps() {
  const size_t bytes = 64ull << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    Stopwatch w;
    std::memcpy(dst.data(), src.data(), bytes);
    best = std::max(best, static_cast<double>(bytes) / w.elapsedSeconds() / 1e9);
    src[i] = dst[bytes - 1 - i];  // keep the copies observable
  }
  return best;
}

int runCollectivesBench(const CollectivesBenchOptions& options, std::ostream& out) {
  validate(options);
  const RuntimeEnv env = readRuntimeEnv();  // runtime/core/runtime_env.hpp
  const auto launchedRank = env.rank;
  const auto launchedWorld = env.worldSize;
  const bool launched = launchedRank.has_value() && launchedWorld.has_value();
  CollectivesBenchOptions o = options;
  if (launched) o.worldSize = static_cast<int>(*launchedWorld);
  if (launched && o.debug != std::vector<std::string>{"off"}) {
    throw ValueError("--debug: under `distlab launch` the groups carry what initProcessGroup "
                     "installs (set TORCH_DISTRIBUTED_DEBUG, TORCH_FR_BUFFER_SIZE or "
                     "DISTLAB_WATCHDOG instead); --debug is for forked ranks");
  }
  if (launched) o.debug = {"init_process_group"};  // what the header and JSON report
  if (launched && !o.peers.empty()) {
    throw ValueError("--peer: peers run beside forked ranks; run `distlab bench collectives "
                     "--peer ...` directly, not under `distlab launch`");
  }
  const std::string startTime = ncclTestsNow();
  const double memcpyGBps = measureMemcpyGBps();
  std::vector<SeriesRows> rounds;
  if (launched) {
    // One rank of a `distlab launch` job: the default group for the first
    // backend, a new group for each further one (created in the same order).
    comm::initProcessGroup({.backend = o.backends[0],
                            .timeout = std::chrono::seconds(120),
                            .backendOptions = o.backendOptions});
    std::vector<std::shared_ptr<comm::ProcessGroup>> groups;
    for (const auto& b : o.backends) {
      groups.push_back(b == o.backends[0] ? comm::defaultGroup() : comm::newGroup({.backend = b}));
    }
    for (int round = 0; round < o.rounds; ++round) {
      SeriesRows& rows = rounds.emplace_back();
      for (size_t i = 0; i < o.backends.size(); ++i) {
        rows[o.backends[i]] = benchRank(*groups[i], o.backends[i], o);
        for (auto& r : rows[o.backends[i]]) r.debug = o.debug.front();  // "init_process_group"
      }
    }
    groups.clear();
    const bool leader = comm::getRank() == 0;
    comm::destroyProcessGroup();
    if (!leader) return 0;
  } else {
    // $TMPDIR/distlab_bench_*, removed even when the bench is killed.
    GuardedTempDir dir("distlab_bench_");
    for (int round = 0; round < o.rounds; ++round) rounds.push_back(sweepRound(o, round, dir.path()));
    std::vector<std::string> series;
    for (const auto& b : o.backends) {
      for (const auto& d : o.debug) series.push_back(seriesName(b, d));
    }
    o.backends = series;  // from here on each series is printed and compared as a backend
  }
  const SeriesRows all = o.rounds == 1 ? rounds.front() : mergeRounds(rounds, o.worldSize);
  out << fmt::format("# distlab bench collectives: world size {}, ranks as {}\n", o.worldSize,
                     launched ? "launched processes (env://)" : "forked processes");
  out << fmt::format("# memcpy bandwidth (64 MiB, best of 5, same run): {:.2f} GB/s\n", memcpyGBps);
  if (o.rounds > 1) {
    out << fmt::format("# {} rounds, alternating which runs first: each p50 is the median of the "
                       "rounds' p50s, each ratio the median of the per-round ratios\n",
                       o.rounds);
  }
  out << "# busbw = algbw x factor: all_reduce 2(n-1)/n; broadcast, reduce, send_recv 1; the "
         "gathers, scatters and all-to-alls (n-1)/n; barrier 0 (nccl-tests)\n";
  int64_t wrong = 0;
  for (const auto& b : o.backends) {
    for (const auto& mode : modesOf(o)) printTable(out, b, mode, all.at(b), o);
    for (const auto& r : all.at(b)) wrong += r.wrong;
  }
  for (const auto& p : o.peers) {
    printTable(out, p, "blocking", all.at(p), o);
    for (const auto& r : all.at(p)) wrong += r.wrong;
  }
  if (o.backends.size() > 1 || !o.peers.empty()) printRatios(out, all, o);
  out << fmt::format("#\n# Out of bounds values : {} {}\n", wrong,
                     !o.check ? "N/A (--check 0)" : wrong == 0 ? "OK" : "WRONG");
  if (!o.csvPath.empty() || !o.ncclJsonPath.empty()) {
    std::vector<BenchRow> flat;
    for (const auto& [name, rows] : all) flat.insert(flat.end(), rows.begin(), rows.end());
    if (!o.csvPath.empty()) writeNcclTestsCsv(o.csvPath, flat, o);
    if (!o.ncclJsonPath.empty()) writeNcclTestsJson(o.ncclJsonPath, flat, o, startTime);
  }
  if (!o.jsonPath.empty()) {
    json j{{"world_size", o.worldSize},
           {"rounds", o.rounds},
           {"debug", o.debug},  // the series' layers, in order (seriesName)
           {"options", o.backendOptions},  // --option key=value, as given
           {"memcpy_GBps", memcpyGBps},
           {"dtype", "float32"},
           {"busbw_factors", busBandwidthFactors(o.worldSize)},
           {"rows", json::array()}};
    for (const auto& [name, rows] : all) {
      for (const auto& r : rows) j["rows"].push_back(benchRowToJson(r));
    }
    std::ofstream(o.jsonPath) << j.dump(2) << "\n";
  }
  return wrong == 0 ? 0 : 1;
}

}  // namespace distlab::emulator
