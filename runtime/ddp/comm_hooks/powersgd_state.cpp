#include <cmath>

#include <fmt/format.h>

#include "runtime/core/errors.hpp"
#include "runtime/core/logging.hpp"
#include "runtime/ddp/comm_hooks/powersgd_hook.hpp"

namespace distlab::ddp {
namespace {

void checkOptions(const PowerSGDOptions& o) {
  if ((o.useErrorFeedback || o.warmStart) && o.startPowerSGDIter <= 1) {
    throw ValueError(
        "Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is enabled, "
        "because PowerSGD can only be applied after the first two iterations in DDP.");
  }
  if (o.matrixApproximationRank < 1) {
    throw ValueError(fmt::format(
        "PowerSGDState: matrix_approximation_rank={} must be at least 1",
        o.matrixApproximationRank));
  }
  if (!(o.minCompressionRate > 0.0) || !std::isfinite(o.minCompressionRate)) {
    throw ValueError(fmt::format("PowerSGDState: min_compression_rate={} must be positive",
                                 o.minCompressionRate));
  }
  if (o.compressionStatsLoggingFrequency < 1) {
    throw ValueError(fmt::format(
        "PowerSGDState: compression_stats_logging_frequency={} must be at least 1",
        o.compressionStatsLoggingFrequency));
  }
  if (o.orthogonalizationEpsilon < 0.0) {
    throw ValueError("PowerSGDState: orthogonalization_epsilon must not be negative");
  }
}

std::map<size_t, Tensor> deepCopy(const std::map<size_t, Tensor>& in) {
  std::map<size_t, Tensor> out;
  for (const auto& [k, v] : in) out.emplace(k, v.clone());
  return out;
}

}  // namespace

PowerSGDState::PowerSGDState(comm::ProcessGroupPtr group, PowerSGDOptions options)
    : group_(std::move(group)), options_(options), rng_(options.randomSeed) {
  checkOptions(options_);
  DL_LOG(INFO,
         "PowerSGD config: matrix_approximation_rank = {}; start_powerSGD_iter = {}; "
         "min_compression_rate = {}; orthogonalization_epsilon = {}; random_seed = {}; "
         "compression_stats_logging_frequency = {}; batch_tensors_with_same_shape = {}",
         options_.matrixApproximationRank, options_.startPowerSGDIter,
         options_.minCompressionRate, options_.orthogonalizationEpsilon, options_.randomSeed,
         options_.compressionStatsLoggingFrequency, options_.batchTensorsWithSameShape);
}

std::tuple<double, int64_t, int64_t> PowerSGDState::compressionStats() const {
  const double rate = totalNumelAfterCompression > 0
                          ? static_cast<double>(totalNumelBeforeCompression) /
                                static_cast<double>(totalNumelAfterCompression)
                          : 0.0;
  return {rate, totalNumelBeforeCompression, totalNumelAfterCompression};
}

void PowerSGDState::maybeIncreaseIter(const GradBucket& bucket) {
  if (!bucket.isLast()) return;
  ++iter_;
  if (iter_ == options_.startPowerSGDIter) {
    DL_LOG(INFO, "Start to apply PowerSGD after {} iterations.", iter_);
  }
}

void PowerSGDState::reportCompressionStats(const GradBucket& bucket) {
  if (!bucket.isLast() || iter_ < nextStatsReport_) return;
  const auto [rate, before, after] = compressionStats();
  DL_LOG(INFO,
         "Compression stats: iter {}, total before compression {}, total after compression {}, "
         "rate {}",
         iter_, before, after, rate);
  nextStatsReport_ = iter_ + options_.compressionStatsLoggingFrequency;
}

uint64_t PowerSGDState::nextSeed() {
  ++rngDraws_;
  return static_cast<uint64_t>(rng_.randint(0, 1000000000));
}

PowerSGDStateDict PowerSGDState::stateDict() const {
  PowerSGDStateDict d;
  d.options = options_;
  d.iter = iter_;
  d.totalNumelBeforeCompression = totalNumelBeforeCompression;
  d.totalNumelAfterCompression = totalNumelAfterCompression;
  d.nextStatsReport = nextStatsReport_;
  d.rngDraws = rngDraws_;
  d.errorDict = deepCopy(errorDict);
  d.pMemoryDict = deepCopy(pMemoryDict);
  d.qMemoryDict = deepCopy(qMemoryDict);
  return d;
}

std::shared_ptr<PowerSGDState> PowerSGDState::fromStateDict(const PowerSGDStateDict& d,
                                                            comm::ProcessGroupPtr group) {
  auto state = std::make_shared<PowerSGDState>(std::move(group), d.options);
  state->iter_ = d.iter;
  state->totalNumelBeforeCompression = d.totalNumelBeforeCompression;
  state->totalNumelAfterCompression = d.totalNumelAfterCompression;
  state->nextStatsReport_ = d.nextStatsReport;
  for (int64_t i = 0; i < d.rngDraws; ++i) state->nextSeed();
  state->errorDict = deepCopy(d.errorDict);
  state->pMemoryDict = deepCopy(d.pMemoryDict);
  state->qMemoryDict = deepCopy(d.qMemoryDict);
  return state;
}

namespace detail {

std::tuple<bool, int64_t, int64_t> shouldCompress(int64_t rows, int64_t cols, int64_t rank,
                                                  double minCompressionRate) {
  const int64_t uncompressed = rows * cols;
  const int64_t compressed = (rows + cols) * rank;
  return {static_cast<double>(compressed) * minCompressionRate <
              static_cast<double>(uncompressed),
          uncompressed, compressed};
}

void orthogonalize(Tensor& matrices, double epsilon) {
  Tensor work = matrices.to(DType::kFloat64).contiguous();
  if (work.isSame(matrices)) work = matrices.clone();
  const int64_t batch = work.size(0), n = work.size(1), r = work.size(2);
  double* base = work.data<double>();
  for (int64_t b = 0; b < batch; ++b) {
    double* m = base + b * n * r;
    for (int64_t i = 0; i < r; ++i) {
      double norm = 0.0;
      for (int64_t k = 0; k < n; ++k) norm += m[k * r + i] * m[k * r + i];
      norm = std::sqrt(norm) + epsilon;
      for (int64_t k = 0; k < n; ++k) m[k * r + i] = norm > 0.0 ? m[k * r + i] / norm : 0.0;
      for (int64_t j = i + 1; j < r; ++j) {
        double dot = 0.0;
        for (int64_t k = 0; k < n; ++k) dot += m[k * r + i] * m[k * r + j];
        for (int64_t k = 0; k < n; ++k) m[k * r + j] -= dot * m[k * r + i];
      }
    }
  }
  matrices.copy_(work);
}

}  // namespace detail
}  // namespace distlab::ddp
