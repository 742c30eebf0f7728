// computeBucketAssignmentBySize against the documented examples and against an
// independent reference model written here (RapidCheck).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>

#include "runtime/core/errors.hpp"
#include "runtime/ddp/bucket_assignment.hpp"

namespace distlab::ddp {
namespace {

using Buckets = std::vector<std::vector<size_t>>;

std::vector<TensorSpec> floats(const std::vector<int64_t>& numels) {
  std::vector<TensorSpec> specs;
  for (int64_t n : numels) specs.push_back(TensorSpec{n, DType::kFloat32, Device::cpu()});
  return specs;
}

// Reference: a per-key state machine stated directly from the documentation
// (close a bucket once it reaches its limit; the next bucket of that key uses
// the next limit; leftovers after; sort by smallest index unless indices given).
BucketAssignment referenceAssignment(const std::vector<TensorSpec>& tensors,
                                     const std::vector<int64_t>& limits,
                                     const std::vector<size_t>& order) {
  struct Open {
    std::vector<size_t> items;
    int64_t bytes = 0;
    size_t closed = 0;
  };
  std::map<std::pair<int, int>, Open> open;
  std::vector<std::pair<int, int>> keyOrder;
  BucketAssignment out;
  for (size_t pos = 0; pos < tensors.size(); ++pos) {
    const size_t idx = order.empty() ? pos : order[pos];
    const std::pair<int, int> key{static_cast<int>(tensors[pos].dtype),
                                  static_cast<int>(tensors[pos].device.type)};
    if (!open.count(key)) keyOrder.push_back(key);
    Open& o = open[key];
    o.items.push_back(idx);
    o.bytes += tensors[pos].bytes();
    const int64_t limit = limits[std::min(o.closed, limits.size() - 1)];
    if (o.bytes >= limit) {
      out.buckets.push_back(o.items);
      out.sizeLimits.push_back(limit);
      o.items.clear();
      o.bytes = 0;
      ++o.closed;
    }
  }
  for (const auto& key : keyOrder) {
    Open& o = open[key];
    if (o.items.empty()) continue;
    out.buckets.push_back(o.items);
    out.sizeLimits.push_back(limits[std::min(o.closed, limits.size() - 1)]);
  }
  if (order.empty()) {
    // Selection sort by smallest member (stable for ties, which cannot occur).
    for (size_t i = 0; i < out.buckets.size(); ++i) {
      size_t best = i;
      for (size_t j = i + 1; j < out.buckets.size(); ++j) {
        auto mn = [](const std::vector<size_t>& b) {
          size_t m = b[0];
          for (size_t v : b) m = std::min(m, v);
          return m;
        };
        if (mn(out.buckets[j]) < mn(out.buckets[best])) best = j;
      }
      std::swap(out.buckets[i], out.buckets[best]);
      std::swap(out.sizeLimits[i], out.sizeLimits[best]);
    }
  }
  return out;
}

TEST(BucketAssignmentTest, DesignNoteFigureTwoBucketsOfTwo) {
  // Four equal parameters, a cap of two of them: {0,1} and {2,3}; DDP reverses
  // the list, so grad2/grad3 form bucket 0 and grad0/grad1 bucket 1.
  auto a = computeBucketAssignmentBySize(floats({10, 10, 10, 10}), {80});
  EXPECT_EQ(a.buckets, (Buckets{{0, 1}, {2, 3}}));
  EXPECT_EQ(a.sizeLimits, (std::vector<int64_t>{80, 80}));
}

TEST(BucketAssignmentTest, FirstBucketSmallThenCapAndOvershootByOneTensor) {
  // 1 MiB first limit: 200k floats (800 KB) + 100k (400 KB) overshoots to 1.2 MB.
  auto a = computeBucketAssignmentBySize(floats({200000, 100000, 300000, 300000, 10}),
                                         {kDefaultFirstBucketBytes, 2 * 1024 * 1024});
  EXPECT_EQ(a.buckets, (Buckets{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(a.sizeLimits,
            (std::vector<int64_t>{kDefaultFirstBucketBytes, 2 * 1024 * 1024, 2 * 1024 * 1024}));
}

TEST(BucketAssignmentTest, ReferenceMlpGivesTwoBucketsAfterRebuildOrder) {
  // Reference MLP 4 x Linear(1024,1024) + Linear(1024,10), ready order = reverse.
  std::vector<int64_t> numels;
  for (int i = 0; i < 4; ++i) numels.insert(numels.end(), {1024 * 1024, 1024});
  numels.insert(numels.end(), {10 * 1024, 10});
  std::vector<size_t> order;
  std::vector<TensorSpec> specs;
  for (size_t i = numels.size(); i-- > 0;) {
    order.push_back(i);
    specs.push_back(floats({numels[i]})[0]);
  }
  auto a = computeBucketAssignmentBySize(specs, {kDefaultFirstBucketBytes, kDefaultBucketBytesCap},
                                         {}, order);
  EXPECT_EQ(a.buckets, (Buckets{{9, 8, 7, 6}, {5, 4, 3, 2, 1, 0}}));
}

TEST(BucketAssignmentTest, KeysByDtypeAndSparseGetOwnBucket) {
  std::vector<TensorSpec> specs = floats({4, 4, 4});
  specs[1].dtype = DType::kFloat64;
  auto a = computeBucketAssignmentBySize(specs, {1000}, {false, false, true});
  EXPECT_EQ(a.buckets, (Buckets{{0}, {1}, {2}}));
  EXPECT_EQ(a.sizeLimits[2], kNoSizeLimit);
}

TEST(BucketAssignmentTest, TensorIndicesKeepReadyOrder) {
  auto a = computeBucketAssignmentBySize(floats({4, 4, 4}), {32}, {}, {5, 2, 7});
  EXPECT_EQ(a.buckets, (Buckets{{5, 2}, {7}}));
}

TEST(BucketAssignmentTest, BadArgumentsNameTheInput) {
  EXPECT_THROW(computeBucketAssignmentBySize(floats({1}), {}), ValueError);
  try {
    computeBucketAssignmentBySize(floats({1}), {0});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("size limit 0 is not positive"), std::string::npos);
  }
  EXPECT_THROW(computeBucketAssignmentBySize(floats({1, 2}), {8}, {}, {0}), ValueError);
}

RC_GTEST_PROP(BucketAssignmentProperty, MatchesReferenceModel, ()) {
  const auto n = *rc::gen::inRange<size_t>(0, 40);
  std::vector<TensorSpec> specs;
  for (size_t i = 0; i < n; ++i) {
    TensorSpec s;
    s.numel = *rc::gen::inRange<int64_t>(1, 5000);
    s.dtype = *rc::gen::element(DType::kFloat32, DType::kFloat64, DType::kFloat16);
    specs.push_back(s);
  }
  const auto limits = *rc::gen::container<std::vector<int64_t>>(
      *rc::gen::inRange<size_t>(1, 4), rc::gen::inRange<int64_t>(1, 40000));
  std::vector<size_t> order;
  if (*rc::gen::arbitrary<bool>()) {
    for (size_t i = 0; i < n; ++i) order.push_back(n - 1 - i);
  }
  const auto got = computeBucketAssignmentBySize(specs, limits, {}, order);
  const auto want = referenceAssignment(specs, limits, order);
  RC_ASSERT(got.buckets == want.buckets);
  RC_ASSERT(got.sizeLimits == want.sizeLimits);
  // Every tensor lands in exactly one bucket.
  std::vector<int> seen(n, 0);
  for (const auto& b : got.buckets) {
    for (size_t i : b) ++seen[order.empty() ? i : n - 1 - i];
  }
  for (int s : seen) RC_ASSERT(s == 1);
}

}  // namespace
}  // namespace distlab::ddp
