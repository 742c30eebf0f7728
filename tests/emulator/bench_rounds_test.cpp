// bench_rounds: merging the rounds of `distlab bench collectives --rounds N`
// (Note [Bench rounds]). The figures are made up; what is checked is which
// statistic of the rounds each merged field is.
#include "emulator/bench/bench_rounds.hpp"

#include <gtest/gtest.h>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {
namespace {

BenchRow row(const std::string& backend, uint64_t bytes, double p50, double avg, int64_t wrong = 0) {
  BenchRow r;
  r.backend = backend;
  r.op = "all_reduce";
  r.bytes = bytes;
  r.count = bytes / 4;
  r.p50Us = p50;
  r.avgUs = avg;
  r.wrong = wrong;
  return r;
}

TEST(BenchRounds, MedianOfOddEvenAndEmpty) {
  EXPECT_EQ(medianOf({3, 1, 2}), 2);
  EXPECT_EQ(medianOf({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(medianOf({}), 0);
}

TEST(BenchRounds, MergedRowIsTheMedianP50WithTheRoundsInOrder) {
  std::vector<SeriesRows> rounds = {
      {{"shm", {row("shm", 8, 1.0, 2.0), row("shm", 1 << 20, 100, 110, 1)}}},
      {{"shm", {row("shm", 8, 3.0, 4.0), row("shm", 1 << 20, 300, 310)}}},
      {{"shm", {row("shm", 8, 2.0, 6.0), row("shm", 1 << 20, 200, 210, 2)}}},
  };
  const SeriesRows merged = mergeRounds(rounds, 2);
  const BenchRow& small = merged.at("shm")[0];
  EXPECT_EQ(small.p50Us, 2.0);
  EXPECT_EQ(small.avgUs, 4.0);  // the mean of the rounds' means
  EXPECT_EQ(small.roundP50Us, (std::vector<double>{1.0, 3.0, 2.0}));
  const BenchRow& large = merged.at("shm")[1];
  EXPECT_EQ(large.wrong, 3);  // a wrong element in any round counts
  // algbw from the merged p50: 1 MiB / 200 us; all_reduce busbw factor at 2 ranks is 1.
  EXPECT_DOUBLE_EQ(large.algbwGBps, (1 << 20) / 200e3);
  EXPECT_DOUBLE_EQ(large.busbwGBps, large.algbwGBps);
}

TEST(BenchRounds, RoundsThatMeasuredDifferentRowsAreRefused) {
  std::vector<SeriesRows> rounds = {{{"shm", {row("shm", 8, 1, 1)}}},
                                    {{"shm", {row("shm", 16, 1, 1)}}}};
  EXPECT_THROW(mergeRounds(rounds, 2), Error);
  rounds = {{{"shm", {row("shm", 8, 1, 1)}}}, {{"mpi", {row("mpi", 8, 1, 1)}}}};
  EXPECT_THROW(mergeRounds(rounds, 2), Error);
}

TEST(BenchRounds, RatioIsTheMedianOfThePerRoundRatios) {
  // The peer was fast in round 0 and slow in rounds 1 and 2, and so was distlab:
  // per-round ratios 2, 1, 1 (median 1), while the ratio of the medians is 3/6.
  BenchRow mine = row("shm", 8, 3, 3);
  mine.roundP50Us = {2, 3, 6};
  BenchRow peer = row("mpi", 8, 6, 6);
  peer.roundP50Us = {1, 3, 6};
  const RoundRatio r = roundRatio(mine, peer);
  EXPECT_EQ(r.median, 1.0);
  EXPECT_EQ(r.min, 1.0);
  EXPECT_EQ(r.max, 2.0);
  // A single sweep (no rounds recorded): the plain ratio.
  const RoundRatio single = roundRatio(row("shm", 8, 3, 3), row("mpi", 8, 6, 6));
  EXPECT_EQ(single.median, 0.5);
  EXPECT_EQ(single.min, 0.5);
  EXPECT_EQ(single.max, 0.5);
}

}  // namespace
}  // namespace distlab::emulator
