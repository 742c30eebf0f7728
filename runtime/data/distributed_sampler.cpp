#include "runtime/data/distributed_sampler.hpp"

#include <fmt/format.h>

#include <mutex>
#include <numeric>
#include <utility>

#include "runtime/comm/group_management.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/tensor/generator.hpp"

namespace distlab::data {
namespace {

comm::ProcessGroupPtr groupForDefaults(const DistributedSamplerOptions& o) {
  if (o.group) return o.group;
  if (!comm::isInitialized()) {
    throw ValueError("DistributedSampler: numReplicas and rank default to the default process "
                     "group's size and rank, but none is initialized; call initProcessGroup "
                     "first or pass both");
  }
  return comm::defaultGroup();
}

// Fisher-Yates with distlab's Generator: the same permutation on every rank
// and platform for one seed.
void shuffleInPlace(std::vector<int64_t>& v, uint64_t seed) {
  Generator gen(seed);
  for (int64_t i = static_cast<int64_t>(v.size()) - 1; i > 0; --i) {
    std::swap(v[static_cast<size_t>(i)], v[static_cast<size_t>(gen.randint(0, i + 1))]);
  }
}

std::mutex& extraMutex() {
  static std::mutex m;
  return m;
}

std::function<int64_t()>& extraSource() {
  static std::function<int64_t()> source;
  return source;
}

int64_t extraSamples() {
  std::function<int64_t()> source;
  {
    std::lock_guard<std::mutex> lock(extraMutex());
    source = extraSource();
  }
  return source ? source() : 0;
}

}  // namespace

void setExtraSamplesSource(std::function<int64_t()> source) {
  std::lock_guard<std::mutex> lock(extraMutex());
  extraSource() = std::move(source);
}

DistributedSampler::DistributedSampler(int64_t datasetSize, const DistributedSamplerOptions& o)
    : size_(datasetSize), shuffle_(o.shuffle), seed_(o.seed), dropLast_(o.dropLast) {
  if (datasetSize < 0) {
    throw ValueError(fmt::format("DistributedSampler: the dataset size must be >= 0, got {}",
                                 datasetSize));
  }
  numReplicas_ = o.numReplicas >= 0 ? o.numReplicas : groupForDefaults(o)->size();
  rank_ = o.rank >= 0 ? o.rank : groupForDefaults(o)->rank();
  if (numReplicas_ < 1) {
    throw ValueError(fmt::format("DistributedSampler: numReplicas must be >= 1, got {}",
                                 numReplicas_));
  }
  if (o.rank < -1 || rank_ >= numReplicas_) {
    throw ValueError(fmt::format("Invalid rank {}, rank should be in the interval [0, {}]",
                                 o.rank < -1 ? o.rank : rank_, numReplicas_ - 1));
  }
  const int64_t n = numReplicas_;
  if (dropLast_ && size_ % n != 0) {
    // PyTorch's ceil((size - n) / n): floor(size / n) when n does not divide size.
    numSamples_ = size_ / n;
  } else {
    numSamples_ = (size_ + n - 1) / n;
  }
  if (numSamples_ > 0) extra_ = extraSamples();  // an empty share has nothing to repeat
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> all(static_cast<size_t>(size_));
  std::iota(all.begin(), all.end(), int64_t{0});
  if (shuffle_) shuffleInPlace(all, seed_ + static_cast<uint64_t>(epoch_));
  const size_t total = static_cast<size_t>(totalSize());
  if (all.size() > total) {
    all.resize(total);  // dropLast: the tail goes
  } else if (!all.empty()) {
    const size_t original = all.size();
    for (size_t i = 0; all.size() < total; ++i) all.push_back(all[i % original]);
  }
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(numSamples_));
  const size_t stride = static_cast<size_t>(numReplicas_);
  for (size_t i = static_cast<size_t>(rank_); i < all.size(); i += stride) mine.push_back(all[i]);
  const size_t share = mine.size();
  for (int64_t i = 0; i < extra_; ++i) mine.push_back(mine[static_cast<size_t>(i) % share]);
  return mine;
}

}  // namespace distlab::data
