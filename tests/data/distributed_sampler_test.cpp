// DistributedSampler against PyTorch's documented semantics: sizes, padding
// by repetition, drop_last, disjoint shards, shuffling by seed + epoch, and
// the errors.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "runtime/comm/group_management.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/data/distributed_sampler.hpp"

namespace distlab::data {
namespace {

DistributedSamplerOptions opts(int replicas, int rank, bool shuffle, bool dropLast,
                               uint64_t seed = 0) {
  DistributedSamplerOptions o;
  o.numReplicas = replicas;
  o.rank = rank;
  o.shuffle = shuffle;
  o.dropLast = dropLast;
  o.seed = seed;
  return o;
}

// The worked example of PyTorch's padding: 10 samples on 4 ranks, in order:
// padded to 12 with indices 0 and 1, then every 4th.
TEST(DistributedSampler, PadsByRepeatingTheStart) {
  std::vector<std::vector<int64_t>> expected = {{0, 4, 8}, {1, 5, 9}, {2, 6, 0}, {3, 7, 1}};
  for (int r = 0; r < 4; ++r) {
    DistributedSampler s(10, opts(4, r, false, false));
    EXPECT_EQ(s.numSamples(), 3);
    EXPECT_EQ(s.totalSize(), 12);
    EXPECT_EQ(s.indices(), expected[static_cast<size_t>(r)]) << "rank " << r;
  }
}

// Padding longer than the list repeats it as often as needed (2 samples, 5 ranks).
TEST(DistributedSampler, PadsShortListsRepeatedly) {
  std::vector<int64_t> all;
  for (int r = 0; r < 5; ++r) {
    auto mine = DistributedSampler(2, opts(5, r, false, false)).indices();
    ASSERT_EQ(mine.size(), 1u);
    all.push_back(mine[0]);
  }
  EXPECT_EQ(all, (std::vector<int64_t>{0, 1, 0, 1, 0}));
}

TEST(DistributedSampler, DropLastCutsTheTail) {
  DistributedSampler s(10, opts(4, 1, false, true));
  EXPECT_EQ(s.numSamples(), 2);  // ceil((10 - 4) / 4)
  EXPECT_EQ(s.indices(), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(DistributedSampler(3, opts(4, 0, false, true)).numSamples(), 0);
  EXPECT_EQ(DistributedSampler(8, opts(4, 0, false, true)).numSamples(), 2);  // divisible
  EXPECT_EQ(DistributedSampler(0, opts(4, 0, false, false)).indices().size(), 0u);
}

TEST(DistributedSampler, ShuffleFollowsSeedPlusEpoch) {
  DistributedSampler a(100, opts(2, 0, true, false, 7));
  DistributedSampler b(100, opts(2, 0, true, false, 7));
  EXPECT_EQ(a.indices(), b.indices());
  auto first = a.indices();
  a.setEpoch(1);
  EXPECT_NE(a.indices(), first);
  DistributedSampler c(100, opts(2, 0, true, false, 8));
  EXPECT_EQ(c.indices(), a.indices());  // seed 8, epoch 0 == seed 7, epoch 1
  std::vector<int64_t> inOrder(50);
  for (int64_t i = 0; i < 50; ++i) inOrder[static_cast<size_t>(i)] = 2 * i;
  EXPECT_NE(first, inOrder);
}

TEST(DistributedSampler, BadArgumentsAreNamed) {
  EXPECT_THROW(DistributedSampler(-1, opts(2, 0, false, false)), ValueError);
  EXPECT_THROW(DistributedSampler(4, opts(0, 0, false, false)), ValueError);
  try {
    DistributedSampler(4, opts(2, 2, false, false));
    ADD_FAILURE() << "rank 2 of 2 accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Invalid rank 2, rank should be in the interval [0, 1]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(DistributedSampler(4, opts(2, -3, false, false)), ValueError);
  ASSERT_FALSE(comm::isInitialized());
  try {
    DistributedSampler(4, DistributedSamplerOptions{});
    ADD_FAILURE() << "defaults without a process group accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("none is initialized"), std::string::npos) << e.what();
  }
}

// Every rank gets numSamples indices; together they cover the dataset (without
// dropLast) or a disjoint subset of it (with), each index at most
// ceil(total / size) times.
RC_GTEST_PROP(DistributedSamplerProperty, ShardsCoverTheDatasetEvenly, ()) {
  const int64_t size = *rc::gen::inRange<int64_t>(0, 300);
  const int replicas = *rc::gen::inRange(1, 17);
  const bool shuffle = *rc::gen::arbitrary<bool>();
  const bool dropLast = *rc::gen::arbitrary<bool>();
  const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1000);
  std::map<int64_t, int> seen;
  int64_t perRank = -1;
  for (int r = 0; r < replicas; ++r) {
    DistributedSampler s(size, opts(replicas, r, shuffle, dropLast, seed));
    auto mine = s.indices();
    RC_ASSERT(static_cast<int64_t>(mine.size()) == s.numSamples());
    if (perRank >= 0) RC_ASSERT(static_cast<int64_t>(mine.size()) == perRank);
    perRank = static_cast<int64_t>(mine.size());
    for (int64_t i : mine) {
      RC_ASSERT(i >= 0 && i < size);
      ++seen[i];
    }
  }
  if (!dropLast) RC_ASSERT(static_cast<int64_t>(seen.size()) == size);
  const int64_t total = perRank * replicas;
  for (const auto& [index, count] : seen) {
    if (dropLast) RC_ASSERT(count == 1);
    if (size > 0) RC_ASSERT(count <= (total + size - 1) / size);
  }
}

}  // namespace
}  // namespace distlab::data
