#include "tests/tensor/test_util.hpp"

namespace distlab {
namespace {

using testing::f32;
using testing::i64;

Tensor grid() { return arange(12, {DType::kFloat32}).view({3, 4}); }

TEST(Indexing, IndexSelect) {
  EXPECT_EQ(grid().indexSelect(0, i64({2, 0, 2})).toVector<float>(),
            (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
  Tensor cols = grid().indexSelect(1, i64({3, -4}));
  EXPECT_EQ(cols.sizes(), (Shape{3, 2}));
  EXPECT_EQ(cols.toVector<float>(), (std::vector<float>{3, 0, 7, 4, 11, 8}));
  EXPECT_EQ(grid().t().indexSelect(0, i64({1})).toVector<float>(),
            (std::vector<float>{1, 5, 9}));
  EXPECT_THROW_MSG(grid().indexSelect(0, i64({3})), ValueError,
                   "indexSelect: index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_THROW_MSG(grid().indexSelect(0, f32({0})), ValueError,
                   "expected an int64 index tensor, got dtype float32");
}

TEST(Indexing, Gather) {
  Tensor t = f32({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(t.gather(1, i64({0, 0, 1, 0}, {2, 2})).toVector<float>(),
            (std::vector<float>{1, 1, 4, 3}));
  EXPECT_EQ(t.gather(0, i64({1, 0}, {1, 2})).toVector<float>(), (std::vector<float>{3, 2}));
  EXPECT_EQ(t.t().gather(1, i64({1, 1}, {2, 1})).toVector<float>(), (std::vector<float>{3, 4}));
  EXPECT_THROW_MSG(t.gather(1, i64({2}, {1, 1})), ValueError,
                   "gather: index 2 is out of bounds for dimension 1 with size 2");
  EXPECT_THROW_MSG(t.gather(1, i64({0})), ValueError,
                   "index tensor must have the same number of dimensions (1) as the input tensor (2)");
}

TEST(Indexing, ScatterAddAccumulatesDuplicates) {
  Tensor t = zeros({2, 3});
  t.scatterAdd_(1, i64({0, 0, 2, 1, 1, 1}, {2, 3}), f32({1, 2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_EQ(t.toVector<float>(), (std::vector<float>{3, 0, 3, 0, 15, 0}));
  Tensor s = zeros({3});
  s.scatterAdd_(0, i64({2, 2}), f32({1, 1}));
  EXPECT_EQ(s.toVector<float>(), (std::vector<float>{0, 0, 2}));
  EXPECT_THROW_MSG(s.scatterAdd_(0, i64({3}), f32({1})), ValueError, "index 3 is out of bounds");
  EXPECT_THROW_MSG(s.scatterAdd_(0, i64({0}), i64({1})), Error,
                   "expected source dtype float32, got int64");
}

TEST(Indexing, IndexAddAccumulatesDuplicates) {
  Tensor t = zeros({3, 2});
  t.indexAdd_(0, i64({0, 2, 0}), f32({1, 2, 3, 4, 5, 6}, {3, 2}));
  EXPECT_EQ(t.toVector<float>(), (std::vector<float>{6, 8, 0, 0, 3, 4}));
  Tensor u = zeros({2, 3});
  u.indexAdd_(1, i64({1}), f32({7, 8}, {2, 1}));
  EXPECT_EQ(u.toVector<float>(), (std::vector<float>{0, 7, 0, 0, 8, 0}));
  EXPECT_THROW_MSG(t.indexAdd_(0, i64({0}), f32({1, 2, 3}, {1, 3})), ValueError,
                   "indexAdd_: source shape [1, 3] does not match the expected [1, 2]");
  EXPECT_THROW_MSG(t.indexAdd_(0, i64({-4}), f32({1, 2}, {1, 2})), ValueError,
                   "index -4 is out of bounds for dimension 0 with size 3");
}

TEST(Indexing, MaskedFill) {
  Tensor t = f32({1, 2, 3, 4}, {2, 2});
  Tensor mask = fromVector<bool>({true, false});
  EXPECT_EQ(t.maskedFill(mask, -1).toVector<float>(), (std::vector<float>{-1, 2, -1, 4}));
  EXPECT_EQ(t.toVector<float>(), (std::vector<float>{1, 2, 3, 4}));  // out of place
  t.maskedFill_(t.gt(2), 0);
  EXPECT_EQ(t.toVector<float>(), (std::vector<float>{1, 2, 0, 0}));
  EXPECT_THROW_MSG(t.maskedFill(i64({1, 0}), 0), ValueError, "expected a bool mask, got dtype int64");
  EXPECT_THROW_MSG(t.maskedFill(fromVector<bool>({true, false, true}), 0), Error,
                   "maskedFill_: shapes [2, 2] and [3] cannot be broadcast");
  EXPECT_THROW_MSG(i64({1}).maskedFill(fromVector<bool>({true}), 0.5), ValueError,
                   "cannot fill a int64 tensor with the floating point value 0.5");
}

}  // namespace
}  // namespace distlab
