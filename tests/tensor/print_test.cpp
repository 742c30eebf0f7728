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
  EXPECT_EQ(arange(0.0, 2000.0, 1.0).view({40, 50}).toString(),
            "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 4.7000e+01, 4.8000e+01,\n"
            "         4.9000e+01],\n"
            "        [5.0000e+01, 5.1000e+01, 5.2000e+01,  ..., 9.7000e+01, 9.8000e+01,\n"
            "         9.9000e+01],\n"
            "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.4700e+02, 1.4800e+02,\n"
            "         1.4900e+02],\n"
            "        ...,\n"
            "        [1.8500e+03, 1.8510e+03, 1.8520e+03,  ..., 1.8970e+03, 1.8980e+03,\n"
            "         1.8990e+03],\n"
            "        [1.9000e+03, 1.9010e+03, 1.9020e+03,  ..., 1.9470e+03, 1.9480e+03,\n"
            "         1.9490e+03],\n"
            "        [1.9500e+03, 1.9510e+03, 1.9520e+03,  ..., 1.9970e+03, 1.9980e+03,\n"
            "         1.9990e+03]])");
}

TEST(Print, WrapsLongRows) {
  // Strings from PyTorch 1.13: torch.arange(30.) / 7 and torch.arange(40).
  EXPECT_EQ(arange(0.0, 30.0, 1.0).div(7).toString(),
            "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n"
            "        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n"
            "        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n"
            "        3.8571, 4.0000, 4.1429])");
  EXPECT_EQ(arange(40).toString(),
            "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
            "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n"
            "        36, 37, 38, 39])");}

}  // namespace
}  // namespace distlab
