#pragma once
// `distlab bench scale`: what a group costs as it grows, measured from inside
// the ranks of a `distlab launch` job (one process per rank, env://), which
// is how a user's job starts. reports/scale_curve.sh runs it at worlds 2 to
// 1,024 for the cost curve in reports/scale.md.
//
// Every rank runs the same sequence; rank 0 prints the table and writes the
// JSON. Figures (wall clock unless said; "slowest" = the maximum over ranks):
//   spawn_s           from the launching process's start (the rank's parent,
//                     read from /proc, 10 ms resolution) to the last rank's
//                     own process start;
//   formed_s          from the same origin to the last rank returning from
//                     initProcessGroup (spawn, linking, rendezvous, the
//                     default group's backend), and formed_spread_s, first
//                     to last rank;
//   first_collective_s  the first all_reduce (4 B) right after, slowest rank;
//   rows              p50 and mean of the slowest rank per iteration, after
//                     200 ms of small all_reduces (warmUpGroup) and `warmup`
//                     untimed iterations: all_reduce 8 B and 1 MiB and
//                     barrier on the default group (what initProcessGroup
//                     installs: flight recorder and watchdog) and on a group
//                     made with the DETAIL checks (the difference is DETAIL's
//                     cost per operation); monitored_barrier on the default
//                     group;
//   groups            the wall time, slowest rank, to create the DETAIL group
//                     (newGroup of everyone), newSubgroups of `subgroupSize`
//                     and a split of the default group into its lower half,
//                     each followed by one all_reduce on the new group whose
//                     sum is checked (so a group that forms but cannot run
//                     fails the bench).
// Sums are checked: a wrong all_reduce result is an error (exit 1).
#include <iosfwd>
#include <string>

namespace distlab::emulator {

struct ScaleBenchOptions {
  std::string backend = "shm";
  int iters = 20;         // timed iterations per row, 1..100000
  int warmup = 3;         // untimed iterations per row, 0..100000
  int timeoutS = 300;     // the groups' collective timeout, 1..86400
  int subgroupSize = 8;   // newSubgroups' size (min with the world; must divide it)
  std::string jsonPath;   // rank 0 writes the results here; empty: none
};

// Throws ValueError for options out of range (before any rank work) and when
// the process is not a rank of a launched job (RANK/WORLD_SIZE unset).
// Returns the exit code: 0, or 1 when a checked sum was wrong.
int runScaleBench(const ScaleBenchOptions& options, std::ostream& out);

}  // namespace distlab::emulator
