#pragma once
// `distlab bench overlap`: how much communication DDP (and FSDP) hides behind compute,
// per configuration, measured from traces (Note [Overlap metrics]).
//
// Each configuration is a generated training scenario (the scenario runner:
// real rank processes, the shm backend, the link emulator of Note [Link
// emulation without CPU], so communication takes modelled time without taking
// CPU and overlap is measurable on 2 cores) run with tracing on. Per
// (world size, link model): a bucket_cap_mb sweep with DDP's built-in
// allreduce, from tiny buckets to one bucket, and the comm hooks at the
// default cap (noop: the headroom without communication; fp16_compress;
// powersgd). Figures are means over ranks of the steps after two of warm-up; the
// "vs default" column is the step time over that of bucket_cap_mb = 25
// without a hook in the same (world size, link) -- a ratio measured side by
// side in one run (docs/DESIGN.md, house style 8). Progress goes to stderr, one line per run.
//
// FSDP rows (fsdpWraps): the same model under the scenario engine "fsdp",
// wrapped per block ("block"), per block without the implicit prefetches
// ("block_no_prefetch") or at the root only ("root"); their hook column reads
// "fsdp:<wrap>", bucket_mb 0, and vs_default compares with DDP's default.
//
// With rounds > 1 every configuration runs `rounds` times, the configurations
// interleaved round-robin so that a slow phase of a shared machine falls on all
// of them; a row holds the per-column medians of its successful rounds.
//
// With tracingOverhead, the first (world size, link) default configuration
// also runs `overheadRepeats` times untraced and traced, alternating, each run
// at least kOverheadSteps steps (Note [Tracing overhead steps]); the step times
// (recorded by the ranks either way) give tracing's cost, as the median over
// the pairs of traced / untraced (neighbouring runs, so a drift in the
// machine's load cancels).
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace distlab::emulator {

// The fewest steps a tracing-overhead run takes (Note [Tracing overhead steps]).
inline constexpr int kOverheadSteps = 30;

struct OverlapBenchOptions {
  std::vector<int> worldSizes{2, 4};
  std::vector<std::string> links{"ethernet-10g", "ethernet-100g"};
  std::vector<double> capsMb{0.05, 1, 5, 25, 1024};
  std::vector<std::string> hooks{"noop", "fp16_compress", "powersgd"};
  std::vector<std::string> fsdpWraps{"block", "block_no_prefetch", "root"};
  std::string model = "mlp";
  std::vector<int64_t> sizes{512, 2048, 2048, 2048, 16};  // mlp, residual_mlp
  // model "gpt": vocab, block, embd, heads, layers (untied head); batchSize
  // is then sequences of `block` tokens.
  std::vector<int64_t> gpt{256, 64, 256, 4, 4};
  int steps = 6;
  int rounds = 1;
  int batchSize = 32;
  // "cpu", or "cuda": every rank's model and data on the GPU, two or more
  // ranks sharing it over shm (Note [Scenarios on a GPU]).
  std::string device = "cpu";
  bool tracingOverhead = true;
  int overheadRepeats = 3;
  std::string jsonPath;    // empty: no JSON
  std::string executable;  // the distlab binary (default: this one)
};

struct OverlapRow {
  int worldSize = 0;
  std::string link;
  std::string hook;  // "none": DDP's allreduce; "fsdp:<wrap>": an FSDP row
  double capMb = 0;
  double stepMs = 0;
  double computeMs = 0;
  double commMs = 0;
  double exposedMs = 0;
  double backwardMs = 0;  // backward compute (waits excluded)
  // comm and exposed from the last rank's arrival on (Note [Waiting for the last rank])
  double commAfterArrivalMs = 0;
  double exposedAfterArrivalMs = 0;
  double overlapRatio = 0;  // worst rank
  double exposedShare = 0;  // worst rank
  double vsDefault = 0;
  int roundsOk = 0;   // rounds that passed (their medians are the figures above)
  int rounds = 0;
  std::string error;  // no round passed: why the first failed
};

// Runs the sweep; prints the table to `out`. Returns 0, or 1 when a run failed.
int runOverlapBench(const OverlapBenchOptions& options, std::ostream& out);

}  // namespace distlab::emulator
