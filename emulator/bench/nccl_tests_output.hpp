#pragma once
// `distlab bench collectives --csv FILE --nccl-json FILE`: the rows as
// NVIDIA's nccl-tests reports them, for scripts written against its output.
//
// Note [nccl-tests output]
// nccl-tests times each rank's iterations, takes each rank's mean, and
// reduces those means across ranks as its -a says: 0 rank 0's, 1 their mean
// (its default), 2 the minimum, 3 the maximum. "time" is that value in us,
// algbw = size / time (GB/s = 1e9 B/s), busbw = algbw x the op's factor,
// "#wrong" the count of wrong elements (N/A in CSV, null in JSON, without a
// check: -c 0). distlab's rows carry every rank's mean reduced all four ways,
// so --average picks one for these files without another run (distlab's own
// table keeps the slowest rank's p50). A peer's row (--peer) has only its own
// mean: it is the time whatever --average says.
//
// CSV: a header line, then a line per measured row (unsupported ops left
// out); nccl-tests' column names and units (size B, count elements, time us,
// algbw and busbw GB/s), distlab's series, path and op first, the four
// cross-rank reductions last:
//   backend,mode,op,size,count,type,redop,root,time,algbw,busbw,#wrong,
//   time_rank0,time_avg,time_min,time_max
// JSON: nccl-tests' file format, version 2: version, start_time, args, env
// (left empty: the environment may hold secrets), nccl_version (0: not
// NCCL's run), config {nthreads, ngpus, minimum_bytes, maximum_bytes,
// step_factor, warmup_iters, iterations, aggregated_iterations, validation,
// graph, blocking_collectives, per_iter_timing, parallel_init, devices},
// results [{size, count, type, redop, root, out_of_place {time, alg_bw,
// bus_bw, nwrong}, in_place null, actual_iterations, experiment_name,
// distlab {...}}], out_of_bounds {count, okay}, average_bus_bandwidth
// {bandwidth, okay}, errors (the unsupported ops' messages), end_time.
#include <string>
#include <vector>

#include "emulator/bench/collectives_bench.hpp"

namespace distlab::emulator {

// The time nccl-tests would report for `row` under -a `average` (0..3).
double ncclTestsTimeUs(const BenchRow& row, int average);

// Write the files; throw Error naming the flag and the path when they cannot.
void writeNcclTestsCsv(const std::string& path, const std::vector<BenchRow>& rows,
                       const CollectivesBenchOptions& options);
void writeNcclTestsJson(const std::string& path, const std::vector<BenchRow>& rows,
                        const CollectivesBenchOptions& options, const std::string& startTime);

// Local time as nccl-tests writes it ("2026-12-05 12:00:00").
std::string ncclTestsNow();

}  // namespace distlab::emulator
