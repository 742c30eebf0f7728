#include <cmath>

#include "tests/tensor/test_util.hpp"

namespace distlab {
namespace {

using testing::f32;
using testing::i64;

std::vector<bool> bools(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kBool);
  return t.toVector<bool>();
}

TEST(Compare, TensorAndScalar) {
  Tensor a = f32({1, 2, 3});
  Tensor b = f32({3, 2, 1});
  EXPECT_EQ(bools(a.eq(b)), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(bools(a.ne(b)), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(bools(a.gt(b)), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(bools(a.lt(b)), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(bools(a.ge(b)), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(bools(a.le(b)), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(bools(a.eq(2)), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(bools(a.ne(2)), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(bools(a.ge(2)), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(bools(a.le(2)), (std::vector<bool>{true, true, false}));
  // An int tensor compared with a float scalar compares in float.
  EXPECT_EQ(bools(i64({1, 2}).lt(1.5)), (std::vector<bool>{true, false}));
  EXPECT_EQ(bools(i64({1, 2}).gt(1)), (std::vector<bool>{false, true}));
  EXPECT_EQ(bools(f32({NAN}).eq(f32({NAN}))), (std::vector<bool>{false}));
  EXPECT_EQ(a.gt(f32({2}, {1, 1})).sizes(), (Shape{1, 3}));  // broadcasts
}

TEST(Compare, MaximumMinimum) {
  Tensor a = f32({1, 5, NAN});
  Tensor b = f32({3, 2, 0});
  Tensor mx = a.maximum(b);
  EXPECT_EQ(mx.toVector<float>()[0], 3.0f);
  EXPECT_EQ(mx.toVector<float>()[1], 5.0f);
  EXPECT_TRUE(std::isnan(mx.toVector<float>()[2]));  // NaN propagates
  EXPECT_EQ(a.minimum(b).toVector<float>()[1], 2.0f);
  Tensor c = f32({1, 5});
  c.maximum_(f32({2}));
  EXPECT_EQ(c.toVector<float>(), (std::vector<float>{2, 5}));
  c.minimum_(f32({3, 3}));
  EXPECT_EQ(c.toVector<float>(), (std::vector<float>{2, 3}));
}

TEST(Compare, Bitwise) {
  Tensor a = i64({12, 10});
  Tensor b = i64({10, 6});
  EXPECT_EQ(a.bitwiseAnd(b).toVector<int64_t>(), (std::vector<int64_t>{8, 2}));
  EXPECT_EQ(a.bitwiseOr(b).toVector<int64_t>(), (std::vector<int64_t>{14, 14}));
  EXPECT_EQ(a.bitwiseXor(b).toVector<int64_t>(), (std::vector<int64_t>{6, 12}));
  Tensor t = fromVector<bool>({true, true, false});
  Tensor f = fromVector<bool>({true, false, false});
  EXPECT_EQ(bools(t.bitwiseAnd(f)), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(bools(t.bitwiseXor(f)), (std::vector<bool>{false, true, false}));
  EXPECT_THROW_MSG(f32({1}).bitwiseAnd(f32({1})), Error,
                   "bitwiseAnd: not implemented for floating point dtype float32");
}

TEST(Fused, AddcmulAddcdivLerp) {
  Tensor p = f32({1, 2});
  p.addcmul_(f32({2, 3}), f32({4, 5}), 0.5);
  EXPECT_EQ(p.toVector<float>(), (std::vector<float>{5, 9.5}));
  p.addcdiv_(f32({1, 1}), f32({4, 2}), 2);
  EXPECT_EQ(p.toVector<float>(), (std::vector<float>{5.5, 10.5}));
  Tensor q = f32({0, 10});
  q.lerp_(f32({10, 20}), 0.25);
  EXPECT_EQ(q.toVector<float>(), (std::vector<float>{2.5, 12.5}));
  q.lerp_(f32({1, 1}), 1.0);
  EXPECT_EQ(q.toVector<float>(), (std::vector<float>{1, 1}));  // exact at weight 1
  Tensor m = zeros({2, 2});
  m.addcmul_(f32({1, 2}), f32({3}, {1, 1}));  // broadcast operands
  EXPECT_EQ(m.toVector<float>(), (std::vector<float>{3, 6, 3, 6}));
  EXPECT_THROW_MSG(i64({1}).addcdiv_(i64({1}), i64({1})), Error, "addcdiv_: integer division");
  EXPECT_THROW_MSG(p.addcmul_(f32({1, 2, 3}), f32({1})), Error, "addcmul_");
}

}  // namespace
}  // namespace distlab
