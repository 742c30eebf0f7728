// Note [Tensor metadata without allocation]: TensorMetaList keeps a
// single-tensor operation's shapes and dtypes inline, and a list that outgrows
// the inline room (many tensors, many dims) spills to the heap with the same
// contents; copies are deep.
#include <gtest/gtest.h>

#include "runtime/comm/tensor_meta_list.hpp"
#include "runtime/comm/work.hpp"

namespace distlab::testing {
namespace {

using comm::TensorMetaList;

TEST(TensorMetaList, KeepsShapesAndDtypesInOrder) {
  TensorMetaList list{{Shape{2, 3}, DType::kFloat32}, {Shape{}, DType::kInt64}};
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list.shapes(), (std::vector<Shape>{Shape{2, 3}, Shape{}}));
  EXPECT_EQ(list.dtypes(), (std::vector<DType>{DType::kFloat32, DType::kInt64}));
  EXPECT_EQ(list.numel(0), 6);
  EXPECT_EQ(list.numel(1), 1);  // a scalar has one element
}

TEST(TensorMetaList, SpillsPastTheInlineRoomWithTheSameContents) {
  // 9 tensors of 3 dims: past both the 2-tensor and the 8-dim inline room.
  TensorMetaList list;
  std::vector<Shape> expected;
  for (int64_t i = 0; i < 9; ++i) {
    expected.push_back(Shape{i, i + 1, i + 2});
    list.push(expected.back(), i % 2 ? DType::kFloat64 : DType::kInt32);
  }
  EXPECT_EQ(list.shapes(), expected);
  EXPECT_EQ(list.dtype(8), DType::kInt32);
  EXPECT_EQ(list.dtype(7), DType::kFloat64);
  const TensorMetaList copy = list;  // deep: the copy survives the original
  list = TensorMetaList{};
  EXPECT_EQ(copy.shapes(), expected);
  EXPECT_TRUE(list.empty());
}

TEST(TensorMetaList, WorkInfoRecordsEachDefinedTensor) {
  const Tensor a = zeros({3, 4});
  const Tensor b = zeros({5}, {DType::kInt64});
  const std::vector<Tensor> ins{a, Tensor(), b};
  const auto info = comm::makeWorkInfo("g", 0, comm::OpType::kAllgather, 1, ins, {a},
                                       std::chrono::milliseconds(10));
  EXPECT_EQ(info.inputs.shapes(), (std::vector<Shape>{Shape{3, 4}, Shape{5}}));
  EXPECT_EQ(info.inputs.dtypes(), (std::vector<DType>{DType::kFloat32, DType::kInt64}));
  EXPECT_EQ(info.numelIn, 17);
  EXPECT_EQ(info.outputs.shapes(), std::vector<Shape>{(Shape{3, 4})});
}

}  // namespace
}  // namespace distlab::testing
