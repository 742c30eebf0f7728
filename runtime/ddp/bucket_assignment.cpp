#include "runtime/ddp/bucket_assignment.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/core/errors.hpp"

namespace distlab::ddp {
namespace {

struct Accumulator {
  DType dtype;
  Device device;
  std::vector<size_t> indices;
  int64_t bytes = 0;
  size_t limitPos = 0;  // position in the size-limit list for this key
};

void checkArguments(const std::vector<TensorSpec>& tensors, const std::vector<int64_t>& limits,
                    const std::vector<bool>& sparse, const std::vector<size_t>& indices) {
  if (limits.empty()) {
    throw ValueError("computeBucketAssignmentBySize: sizeLimits is empty; pass at least one limit");
  }
  for (int64_t limit : limits) {
    if (limit <= 0) {
      throw ValueError(fmt::format(
          "computeBucketAssignmentBySize: size limit {} is not positive; limits are bytes > 0",
          limit));
    }
  }
  if (!indices.empty() && indices.size() != tensors.size()) {
    throw ValueError(fmt::format(
        "computeBucketAssignmentBySize: tensorIndices has {} entries for {} tensors",
        indices.size(), tensors.size()));
  }
  size_t maxIndex = tensors.size();
  for (size_t index : indices) maxIndex = std::max(maxIndex, index + 1);
  if (!sparse.empty() && sparse.size() < maxIndex) {
    throw ValueError(fmt::format(
        "computeBucketAssignmentBySize: expectSparseGradient has {} entries, need {}",
        sparse.size(), maxIndex));
  }
}

}  // namespace

BucketAssignment computeBucketAssignmentBySize(const std::vector<TensorSpec>& tensors,
                                               const std::vector<int64_t>& sizeLimits,
                                               const std::vector<bool>& expectSparseGradient,
                                               const std::vector<size_t>& tensorIndices) {
  checkArguments(tensors, sizeLimits, expectSparseGradient, tensorIndices);
  BucketAssignment result;
  std::vector<Accumulator> open;  // one per (dtype, device), in first-seen order
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& spec = tensors[i];
    const size_t index = tensorIndices.empty() ? i : tensorIndices[i];
    if (!expectSparseGradient.empty() && expectSparseGradient[index]) {
      result.buckets.push_back({index});
      result.sizeLimits.push_back(kNoSizeLimit);
      continue;
    }
    auto it = std::find_if(open.begin(), open.end(), [&](const Accumulator& a) {
      return a.dtype == spec.dtype && a.device == spec.device;
    });
    if (it == open.end()) {
      open.push_back(Accumulator{spec.dtype, spec.device, {}, 0, 0});
      it = open.end() - 1;
    }
    it->indices.push_back(index);
    it->bytes += spec.bytes();
    const int64_t limit = sizeLimits[it->limitPos];
    if (it->bytes >= limit) {
      result.buckets.push_back(std::move(it->indices));
      result.sizeLimits.push_back(limit);
      it->indices.clear();
      it->bytes = 0;
      if (it->limitPos + 1 < sizeLimits.size()) ++it->limitPos;
    }
  }
  for (Accumulator& acc : open) {
    if (acc.indices.empty()) continue;
    result.buckets.push_back(std::move(acc.indices));
    result.sizeLimits.push_back(sizeLimits[acc.limitPos]);
  }
  if (tensorIndices.empty()) {
    std::vector<size_t> order(result.buckets.size());
    for (size_t b = 0; b < order.size(); ++b) order[b] = b;
    auto minIndex = [&](size_t b) {
      return *std::min_element(result.buckets[b].begin(), result.buckets[b].end());
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return minIndex(a) < minIndex(b); });
    BucketAssignment sorted;
    for (size_t b : order) {
      sorted.buckets.push_back(std::move(result.buckets[b]));
      sorted.sizeLimits.push_back(result.sizeLimits[b]);
    }
    return sorted;
  }
  return result;
}

}  // namespace distlab::ddp
