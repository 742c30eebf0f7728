#pragma once
// `distlab bench collectives --rounds N`: every series and every peer runs N
// times and the rows are merged.
//
// Note [Bench rounds]
// On a shared VM the speed of cross-core traffic changes from one second to the
// next (the hypervisor moves the vCPUs: a cache line's round trip was ~110 ns,
// ~400 ns, once 32 ns in consecutive seconds, reports/collectives_shm_notes.md), and
// Open MPI's small and mid-size rows follow it by 2-3x between two runs of the
// same command. One sweep of distlab followed by one sweep of a peer can land
// in different conditions, and the ratio printed for a size then measures the
// machine, not the implementations. With rounds, the bench alternates: round 0
// runs the distlab series then the peers, round 1 the peers then the series,
// and so on; each ratio is computed within a round (two sweeps run back to
// back) and the reported ratio is the median over rounds, with the range
// beside it. A row's p50 is the median of its rounds' p50s. Rounds = 1 is the
// single sweep of before (distlab first).
#include <map>
#include <string>
#include <vector>

#include "emulator/bench/collectives_bench.hpp"

namespace distlab::emulator {

// Series (or peer) name -> its rows, as one sweep returns them.
using SeriesRows = std::map<std::string, std::vector<BenchRow>>;

// Median of `values` (the mean of the middle two for an even count); 0 when empty.
double medianOf(std::vector<double> values);

// Merges the sweeps of several rounds: every round must hold the same series
// with the same rows in the same order (op, mode, size), else Error. A merged
// row's p50 is the median of the rounds' p50s (kept, in round order, in
// BenchRow::roundP50Us), its mean the mean of their means, algbw and busbw are
// recomputed from the median p50, #wrong is summed and the first error kept.
SeriesRows mergeRounds(const std::vector<SeriesRows>& rounds, int worldSize);

struct RoundRatio {
  double median = 0;
  double min = 0;
  double max = 0;
};
// num / den per round (their roundP50Us index by index) summarised; the plain
// p50 ratio when either row has no rounds recorded.
RoundRatio roundRatio(const BenchRow& num, const BenchRow& den);

}  // namespace distlab::emulator
