#include <sstream>

#include "tests/tensor/test_util.hpp"

namespace distlab {
namespace {

using testing::f32;
using testing::f64;
using testing::i64;

TEST(Print, PyTorchStyle) {
  EXPECT_EQ(f64({1, 2, 3, 4}, {2, 2}).toString(),
            "tensor([[1., 2.],\n        [3., 4.]], dtype=float64)");
  EXPECT_EQ(f32({1.5, -2.25}).toString(), "tensor([ 1.5000, -2.2500])");
  EXPECT_EQ(i64({1, 20, 300}).toString(), "tensor([  1,  20, 300])");
  EXPECT_EQ(fromVector<int32_t>({7}).toString(), "tensor([7], dtype=int32)");
  EXPECT_EQ(scalarTensor(3.0).toString(), "tensor(3.)");
  EXPECT_EQ(fromVector<bool>({true, false}).toString(), "tensor([ True, False])");
  EXPECT_EQ(f32({1e-5f, 1}).toString(), "tensor([1.0000e-05, 1.0000e+00])");
  EXPECT_EQ(zeros({0}).toString(), "tensor([])");
  EXPECT_EQ(zeros({2}, TensorOptions{}.withRequiresGrad(true)).toString(),
            "tensor([0., 0.], requires_grad=True)");
  EXPECT_EQ(arange(8).view({2, 2, 2}).toString(),
            "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])");
  std::ostringstream out;
  out << f32({NAN, INFINITY});
  EXPECT_EQ(out.str(), "tensor([nan, inf])");
  EXPECT_EQ(Tensor().toString(), "tensor(undefined)");
}

TEST(Print, SummarisesLargeTensors) {
  // Strings checked against PyTorch 1.13's repr.
  EXPECT_EQ(arange(2000).toString(), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  EXPECT_EQ(arange(2000).view({40, 50}).slice(1, 0, 4).toString().substr(0, 47),
            "tensor([[   0,    1,    2,    3],\n        [  50");
  EXPECT_EQ(f32({1, 2000}).toString(), "tensor([1.0000e+00, 2.0000e+03])");
}

}  // namespace
}  // namespace distlab
