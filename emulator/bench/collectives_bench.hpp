#pragma once
// `distlab bench collectives`: the nccl-tests style benchmark of a backend's
// flat-tensor collectives (all_reduce, all_gather_into_tensor,
// reduce_scatter_tensor, broadcast, all_to_all_single: torch.distributed's
// names), with results verified.
//
// Conventions (those of NVIDIA's nccl-tests): size is the per-rank buffer in
// bytes (all_gather_into_tensor: the gathered output, reduce_scatter_tensor:
// the input, all_to_all_single: the send buffer); algbw = size / time (GB/s =
// 1e9 B/s); busbw = algbw x factor, factor 2(n-1)/n for all_reduce, (n-1)/n for
// all_gather_into_tensor, reduce_scatter_tensor and all_to_all_single, 1 for
// broadcast. Time is per iteration, the slowest rank's, p50
// and mean over iterations of blocking calls; each rank's mean is also kept,
// reduced across ranks as nccl-tests' -a does (Note [nccl-tests output] in
// nccl_tests_output.hpp, for --csv and --nccl-json). #wrong counts elements
// that differ from the exact expected values (inputs are small integers in
// float32, so every sum is exact), summed over ranks; --check 0 skips it.
//
// Ranks: forked processes by default (FileStore rendezvous), with no debug
// layers unless --debug asks for them; when the process
// runs under `distlab launch` (RANK and WORLD_SIZE set) it is one rank and
// joins through env://.
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "emulator/bench/bench_ops.hpp"
#include "runtime/comm/process_group.hpp"

namespace distlab::emulator {

// Operations the benchmark runs, by torch.distributed's names (the API column
// of runtime/comm/op_names.hpp); --ops takes these, and so do the peers. Its
// --option keys are the backends' own, checked by comm::validateBackendOptions
// before any rank starts.
extern const std::vector<std::string> kBenchOps;
inline constexpr uint64_t kMaxBenchBytes = uint64_t{1} << 30;  // per-rank buffer

struct CollectivesBenchOptions {
  std::vector<std::string> backends{"shm"};
  int worldSize = 2;
  std::vector<std::string> ops = kBenchOps;
  uint64_t minBytes = 8;
  uint64_t maxBytes = 64ull << 20;
  int iters = 0;   // 0: automatic (about 0.2 s per size, 5..2000)
  int warmup = 5;
  std::string jsonPath;  // empty: no JSON
  std::string csvPath;        // nccl-tests' columns (nccl_tests_output.hpp); empty: none
  std::string ncclJsonPath;   // nccl-tests' JSON file; empty: none
  bool check = true;          // nccl-tests' -c: count wrong elements
  int average = 1;            // nccl-tests' -a for the files above: 0 rank 0, 1 avg, 2 min, 3 max
  std::vector<std::string> commandLine;  // the nccl-tests JSON's "args"
  // Also time the asynchronous path (asyncOp=true, then Work::wait): the one
  // DDP and FSDP use, through the progress thread. Rows say which path they are.
  bool async = false;
  std::vector<std::string> peers;  // "mpi", "torch-gloo" (peer_bench.hpp)
  // The debug layers on the forked ranks' groups (debug_install.hpp), one
  // series per entry, run one after another in the same run: "off" (none),
  // "monitor" (flight recorder + watchdog, what initProcessGroup installs by
  // default) or "detail" (the monitor and the DETAIL collective checks). A
  // series other than "off" is named backend+layer ("shm+monitor") in tables,
  // ratios and JSON. Under `distlab launch` the groups get what
  // initProcessGroup installs, and only {"off"} (the default) is accepted.
  std::vector<std::string> debug{"off"};
  std::map<std::string, std::string> backendOptions;  // BackendContext::options
  // Where the buffers live: "cpu", "cuda" (host backends stage CUDA tensors
  // through pinned memory) or "auto" (cuda only for a CUDA-only backend: nccl).
  std::string device = "auto";
  // Sweeps of every series and peer, alternating which goes first (Note [Bench
  // rounds], bench_rounds.hpp); rows and ratios are medians over the rounds.
  int rounds = 1;
};

struct BenchRow {
  std::string backend;
  std::string mode = "blocking";  // "blocking" (asyncOp=false) or "async"
  std::string op;
  uint64_t bytes = 0;
  uint64_t count = 0;
  int iters = 0;
  double p50Us = 0;
  double avgUs = 0;
  double algbwGBps = 0;
  double busbwGBps = 0;
  int64_t wrong = 0;
  bool checked = true;  // false: --check 0 (wrong is not counted)
  // Each rank's mean iteration time, reduced across ranks: rank 0's, the mean,
  // the minimum, the maximum (nccl-tests' -a 0..3); 0 in a peer's row.
  double rank0MeanUs = 0;
  double rankMeanAvgUs = 0;
  double rankMeanMinUs = 0;
  double rankMeanMaxUs = 0;
  std::string error;  // e.g. "Backend gloo does not support reduce_scatter_tensor"
  // The debug layers of the distlab group that measured the row (see
  // CollectivesBenchOptions::debug; "init_process_group" under `distlab
  // launch`); empty for a peer's row.
  std::string debug;
  // With --rounds: the p50 of each round, in round order (p50Us is their
  // median); empty for a single sweep's row.
  std::vector<double> roundP50Us;
};

// memcpy bandwidth of this machine in GB/s (64 MiB buffers, best of 5).
double measureMemcpyGBps();

// Runs the benchmark and prints the tables (and ratios when several backends
// run) to `out`. Returns the process exit code (non-zero when a result was
// wrong or a rank failed). Throws ValueError for bad options.
int runCollectivesBench(const CollectivesBenchOptions& options, std::ostream& out);

// A row as the JSON report (and the peers) write it, and back.
nlohmann::json benchRowToJson(const BenchRow& row);
BenchRow benchRowFromJson(const nlohmann::json& j);

// Runs small all_reduces on `group` (collective) for 200 ms of rank 0's clock,
// so the timings that follow see ranks the scheduler has spread over the
// cores and waits that have warmed up (freshly started ranks read 13-40 us
// for an 8 B all_reduce that later takes under 2 us).
void warmUpGroup(comm::ProcessGroup& group, const Device& dev);

// One rank's part: runs every op and size on `group` (collective: all ranks
// call it), on the blocking path and, with options.async, the asynchronous
// one; the rows carry the cross-rank timings and #wrong on every rank.
std::vector<BenchRow> benchRank(comm::ProcessGroup& group, const std::string& backend,
                                const CollectivesBenchOptions& options);

}  // namespace distlab::emulator
