#include "tests/tensor/test_util.hpp"

#include <rapidcheck/gtest.h>

namespace distlab {
namespace {

using testing::f32;
using testing::i64;

TEST(MultiTensor, Cat) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2});
  Tensor b = f32({5, 6}, {1, 2});
  EXPECT_EQ(cat({a, b}).toVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(cat({a, b.t()}, 1).toVector<float>(), (std::vector<float>{1, 2, 5, 3, 4, 6}));
  EXPECT_EQ(cat({a, a}, -1).sizes(), (Shape{2, 4}));
  EXPECT_EQ(cat({i64({1}), f32({0.5})}).dtype(), DType::kFloat32);  // promotes
  EXPECT_THROW_MSG(cat({a, f32({1, 2, 3}, {1, 3})}), ValueError,
                   "cat: sizes of tensors must match except in dimension 0. Expected size 2 but "
                   "got size 3 for tensor number 1 in the list");
  EXPECT_THROW_MSG(cat({}), ValueError, "expected a non-empty list");
  EXPECT_THROW_MSG(cat({a, f32({1})}), ValueError, "same number of dimensions: got 2 and 1");
}

TEST(MultiTensor, Stack) {
  Tensor a = f32({1, 2});
  Tensor b = f32({3, 4});
  EXPECT_EQ(stack({a, b}).sizes(), (Shape{2, 2}));
  EXPECT_EQ(stack({a, b}, 1).toVector<float>(), (std::vector<float>{1, 3, 2, 4}));
  EXPECT_THROW_MSG(stack({a, f32({1, 2, 3})}), ValueError,
                   "stack: expects each tensor to be equal size, but got [2] at entry 0 and [3] "
                   "at entry 1");
}

TEST(MultiTensor, ChunkSplit) {
  Tensor t = arange(5, {DType::kFloat32});
  auto parts = t.chunk(3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].toVector<float>(), (std::vector<float>{0, 1}));
  EXPECT_EQ(parts[2].toVector<float>(), (std::vector<float>{4}));
  EXPECT_TRUE(parts[1].sharesStorageWith(t));
  auto s = t.split(Shape{1, 4});
  EXPECT_EQ(s[1].toVector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(t.split(2).size(), 3u);
  EXPECT_EQ(arange(6).view({2, 3}).chunk(3, 1)[2].toVector<int64_t>(),
            (std::vector<int64_t>{2, 5}));
  EXPECT_THROW_MSG(t.split(Shape{2, 2}), ValueError, "must be non-negative and sum exactly to 5");
  EXPECT_THROW_MSG(t.chunk(0), ValueError, "chunk: chunks must be positive, got 0");
}

// split then cat is the identity, for any split of any dim.
RC_GTEST_PROP(MultiTensorProp, CatInvertsSplit, (uint8_t rows, uint8_t cols, uint8_t size, bool dim1)) {
  const int64_t r = rows % 6 + 1, c = cols % 6 + 1;
  const int64_t dim = dim1 ? 1 : 0;
  Tensor t = arange(r * c, {DType::kFloat32}).view({r, c});
  const int64_t splitSize = size % t.size(dim) + 1;
  RC_ASSERT(cat(t.split(splitSize, dim), dim).equal(t));
  RC_ASSERT(cat(t.chunk(splitSize, dim), dim).equal(t));
}

}  // namespace
}  // namespace distlab
