#include "emulator/bench/bench_rounds.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/core/errors.hpp"

namespace distlab::emulator {

double medianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

namespace {

void checkSameRow(const BenchRow& a, const BenchRow& b, const std::string& series) {
  if (a.op != b.op || a.mode != b.mode || a.bytes != b.bytes) {
    throw Error(fmt::format("bench rounds: series {} measured {} {} {} B in one round but {} {} "
                            "{} B in another at the same place",
                            series, a.op, a.mode, a.bytes, b.op, b.mode, b.bytes));
  }
}

BenchRow mergeRow(const std::vector<const BenchRow*>& rows, int worldSize) {
  BenchRow out = *rows.front();
  out.wrong = 0;
  double avgSum = 0;
  std::vector<double> rank0, rankAvg, rankMin, rankMax;
  for (const BenchRow* r : rows) {
    out.roundP50Us.push_back(r->p50Us);
    avgSum += r->avgUs;
    rank0.push_back(r->rank0MeanUs);
    rankAvg.push_back(r->rankMeanAvgUs);
    rankMin.push_back(r->rankMeanMinUs);
    rankMax.push_back(r->rankMeanMaxUs);
    out.wrong += r->wrong;
    if (out.error.empty()) out.error = r->error;
  }
  out.p50Us = medianOf(out.roundP50Us);
  out.avgUs = avgSum / static_cast<double>(rows.size());
  out.rank0MeanUs = medianOf(rank0);
  out.rankMeanAvgUs = medianOf(rankAvg);
  out.rankMeanMinUs = medianOf(rankMin);
  out.rankMeanMaxUs = medianOf(rankMax);
  if (out.p50Us > 0) {
    out.algbwGBps = static_cast<double>(out.bytes) / (out.p50Us * 1e3);
    out.busbwGBps = out.algbwGBps * busBandwidthFactor(out.op, worldSize);
  }
  return out;
}

}  // namespace

SeriesRows mergeRounds(const std::vector<SeriesRows>& rounds, int worldSize) {
  if (rounds.empty()) return {};
  SeriesRows merged;
  for (const auto& [series, firstRows] : rounds.front()) {
    std::vector<BenchRow>& out = merged[series];
    for (size_t i = 0; i < firstRows.size(); ++i) {
      std::vector<const BenchRow*> same;
      for (const SeriesRows& round : rounds) {
        const auto it = round.find(series);
        if (it == round.end() || it->second.size() != firstRows.size()) {
          throw Error(fmt::format("bench rounds: series {} has a different set of rows in "
                                  "another round", series));
        }
        checkSameRow(firstRows[i], it->second[i], series);
        same.push_back(&it->second[i]);
      }
      out.push_back(mergeRow(same, worldSize));
    }
  }
  return merged;
}

RoundRatio roundRatio(const BenchRow& num, const BenchRow& den) {
  if (num.roundP50Us.empty() || num.roundP50Us.size() != den.roundP50Us.size()) {
    const double r = num.p50Us / den.p50Us;
    return {r, r, r};
  }
  std::vector<double> ratios;
  for (size_t i = 0; i < num.roundP50Us.size(); ++i) {
    ratios.push_back(num.roundP50Us[i] / den.roundP50Us[i]);
  }
  const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  return {medianOf(ratios), *lo, *hi};
}

}  // namespace distlab::emulator
