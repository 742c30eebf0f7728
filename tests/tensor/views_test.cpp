#include "runtime/tensor/autograd_meta.hpp"
#include "tests/tensor/test_util.hpp"

#include <rapidcheck/gtest.h>

namespace distlab {
namespace {

using testing::f32;
using testing::i64;

Tensor iota(const Shape& shape) {
  return arange(shapeNumel(shape), {DType::kFloat32}).view(shape);
}

TEST(Views, ViewSharesStorageAndInfers) {
  Tensor t = iota({2, 6});
  Tensor v = t.view({3, -1});
  EXPECT_EQ(v.sizes(), (Shape{3, 4}));
  EXPECT_EQ(v.strides(), (Shape{4, 1}));
  EXPECT_TRUE(v.sharesStorageWith(t));
  v.fill_(7);
  EXPECT_EQ(t.toVector<float>()[11], 7.0f);
}

TEST(Views, ViewErrors) {
  Tensor t = iota({10});
  EXPECT_THROW_MSG(t.view({4, 4}), ValueError, "view: shape [4, 4] is invalid for input of size 10");
  EXPECT_THROW_MSG(t.view({-1, -1}), ValueError, "only one dimension can be inferred");
  EXPECT_THROW_MSG(iota({2, 3}).t().view({6}), Error, "use reshape() instead");
}

TEST(Views, ReshapeCopiesOnlyWhenNeeded) {
  Tensor t = iota({2, 3});
  EXPECT_TRUE(t.reshape({3, 2}).sharesStorageWith(t));
  Tensor r = t.t().reshape({6});
  EXPECT_FALSE(r.sharesStorageWith(t));
  EXPECT_EQ(r.toVector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Views, TransposeAndContiguous) {
  Tensor t = iota({2, 3});
  Tensor tt = t.t();
  EXPECT_EQ(tt.sizes(), (Shape{3, 2}));
  EXPECT_EQ(tt.strides(), (Shape{1, 3}));
  EXPECT_FALSE(tt.isContiguous());
  Tensor c = tt.contiguous();
  EXPECT_TRUE(c.isContiguous());
  EXPECT_EQ(c.toVector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(t.contiguous().isSame(t));  // no copy when contiguous
  EXPECT_THROW_MSG(iota({2, 2, 2}).t(), ValueError, "t: expects a tensor with <= 2 dimensions");
  EXPECT_EQ(t.transpose(-1, 0).sizes(), (Shape{3, 2}));
  EXPECT_THROW_MSG(t.transpose(0, 2), ValueError,
                   "transpose: dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST(Views, NarrowSliceSelect) {
  Tensor t = iota({3, 4});
  EXPECT_EQ(t.narrow(1, 1, 2).toVector<float>(), (std::vector<float>{1, 2, 5, 6, 9, 10}));
  EXPECT_EQ(t.slice(1, 0, 4, 2).toVector<float>(), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(t.slice(0, -1, 100).toVector<float>(), (std::vector<float>{8, 9, 10, 11}));
  EXPECT_EQ(t.select(1, -1).toVector<float>(), (std::vector<float>{3, 7, 11}));
  EXPECT_EQ(t.select(0, 1).storageOffset(), 4);
  EXPECT_THROW_MSG(t.select(0, 3), ValueError,
                   "select: index 3 out of range for tensor of size [3, 4] at dimension 0");
  EXPECT_THROW_MSG(t.narrow(1, 3, 2), ValueError, "narrow: start (3) + length (2) exceeds");
  EXPECT_THROW_MSG(t.slice(0, 0, 2, 0), ValueError, "slice: step must be positive");
}

TEST(Views, UnsqueezeSqueezeFlattenPermute) {
  Tensor t = iota({2, 3});
  EXPECT_EQ(t.unsqueeze(0).sizes(), (Shape{1, 2, 3}));
  EXPECT_EQ(t.unsqueeze(-1).sizes(), (Shape{2, 3, 1}));
  EXPECT_EQ(t.unsqueeze(1).strides(), (Shape{3, 3, 1}));
  EXPECT_EQ(t.unsqueeze(1).squeeze(1).sizes(), (Shape{2, 3}));
  EXPECT_EQ(t.squeeze(0).sizes(), (Shape{2, 3}));  // not size 1: unchanged
  EXPECT_EQ(iota({1, 2, 1}).squeeze().sizes(), (Shape{2}));
  EXPECT_EQ(iota({2, 3, 4}).flatten(1).sizes(), (Shape{2, 12}));
  EXPECT_EQ(iota({2, 3, 4}).flatten().sizes(), (Shape{24}));
  Tensor p = iota({2, 3, 4}).permute({2, 0, 1});
  EXPECT_EQ(p.sizes(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.strides(), (Shape{1, 12, 4}));
  EXPECT_THROW_MSG(t.permute({0, 0}), ValueError, "permute: repeated dim");
}

TEST(Views, Expand) {
  Tensor t = f32({1, 2, 3}, {3, 1});
  Tensor e = t.expand({2, 3, 4});
  EXPECT_EQ(e.sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  EXPECT_EQ(e.select(0, 1).select(0, 2).toVector<float>(), (std::vector<float>{3, 3, 3, 3}));
  EXPECT_EQ(t.expand({-1, 2}).sizes(), (Shape{3, 2}));
  EXPECT_THROW_MSG(t.expand({4, 4}), ValueError,
                   "expand: the expanded size of the tensor (4) must match the existing size (3) "
                   "at non-singleton dimension 0");
}

TEST(Views, AsStridedChecksBounds) {
  Tensor t = iota({6});
  EXPECT_EQ(t.asStrided({2, 2}, {3, 1}, 1).toVector<float>(), (std::vector<float>{1, 2, 4, 5}));
  EXPECT_THROW_MSG(t.asStrided({2, 2}, {3, 1}, 2), ValueError, "but the storage holds 6 elements");
}

TEST(Views, CloneIsIndependent) {
  Tensor t = iota({3});
  Tensor c = t.clone();
  c.fill_(1);
  EXPECT_EQ(t.toVector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_FALSE(c.sharesStorageWith(t));
}

TEST(AutogradSlots, AccessorsReadAndWriteMeta) {
  Tensor t = zeros({2});
  EXPECT_FALSE(t.requiresGrad());
  EXPECT_TRUE(t.isLeaf());
  EXPECT_EQ(t.autogradMeta(), nullptr);
  EXPECT_FALSE(t.grad().defined());
  t.setRequiresGrad(true);
  EXPECT_TRUE(t.requiresGrad());
  ASSERT_NE(t.autogradMeta(), nullptr);
  t.setGrad(ones({2}));
  EXPECT_EQ(t.grad().toVector<float>(), (std::vector<float>{1, 1}));
  t.mutableGrad().add_(1);
  EXPECT_EQ(t.grad().toVector<float>(), (std::vector<float>{2, 2}));
  EXPECT_THROW_MSG(t.setGrad(ones({3})), Error, "assigned grad has shape [3]");
  Tensor d = t.detach();
  EXPECT_EQ(d.autogradMeta(), nullptr);
  EXPECT_TRUE(d.sharesStorageWith(t));
  EXPECT_FALSE(d.requiresGrad());
  EXPECT_THROW_MSG(i64({1}).setRequiresGrad(true), Error,
                   "only Tensors of floating point dtype can require gradients");
  Tensor g = zeros({1}, TensorOptions{}.withRequiresGrad(true));
  EXPECT_TRUE(g.requiresGrad());
}

// A reshape is a pure relabelling: the row-major element sequence is unchanged.
RC_GTEST_PROP(ViewsProp, ReshapeKeepsOrder, (uint8_t a, uint8_t b, uint8_t c)) {
  const int64_t x = a % 4 + 1, y = b % 4 + 1, z = c % 4 + 1;
  Tensor t = iota({x, y, z});
  Tensor r = t.permute({2, 1, 0}).reshape({z * y * x});
  std::vector<float> expected;
  for (int64_t k = 0; k < z; ++k)
    for (int64_t j = 0; j < y; ++j)
      for (int64_t i = 0; i < x; ++i) expected.push_back(static_cast<float>((i * y + j) * z + k));
  RC_ASSERT(r.toVector<float>() == expected);
}

}  // namespace
}  // namespace distlab
