// Multi-grad hooks (Note [Multi-grad hooks]) and the autograd side of freeing a
// saved tensor's storage between forward and backward.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/autograd/autograd.hpp"
#include "runtime/autograd/multi_grad_hook.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::autograd {
namespace {

Tensor leaf(std::vector<float> values) {
  Tensor t = fromVector(values);
  t.setRequiresGrad(true);
  return t;
}

TEST(MultiGradHook, AllFiresOnceWhenEveryGradientExists) {
  Tensor a = leaf({1, 2});
  Tensor b = leaf({3});
  int calls = 0;
  TensorList seen;
  registerMultiGradHook({a, b}, [&](const TensorList& grads) {
    ++calls;
    seen = grads;
  });
  backward(ops::add(ops::sum(ops::mul(a, Scalar(2.0))), ops::sum(ops::mul(b, b))));
  ASSERT_EQ(calls, 1);
  EXPECT_EQ(seen[0].toVector<float>(), (std::vector<float>{2, 2}));
  EXPECT_EQ(seen[1].toVector<float>(), (std::vector<float>{6}));
  backward(ops::sum(ops::mul(a, b)));  // fires again in the next backward
  EXPECT_EQ(calls, 2);
}

TEST(MultiGradHook, PartialSetFiresAtTheEndWithUndefinedEntries) {
  Tensor a = leaf({1});
  Tensor b = leaf({1});
  std::vector<bool> defined;
  registerMultiGradHook({a, b}, [&](const TensorList& grads) {
    defined = {grads[0].defined(), grads[1].defined()};
  });
  backward(ops::sum(ops::mul(a, Scalar(3.0))));
  EXPECT_EQ(defined, (std::vector<bool>{true, false}));
}

TEST(MultiGradHook, AnyFiresOnTheFirstGradientOncePerBackward) {
  Tensor x = leaf({1, 2});
  Tensor h = ops::mul(x, Scalar(2.0));
  Tensor y1 = ops::sum(h);
  Tensor y2 = ops::sum(ops::mul(h, h));
  int calls = 0;
  registerMultiGradHook({y1, y2}, [&](const TensorList& grads) {
    ++calls;
    EXPECT_TRUE(grads[0].defined() || grads[1].defined());
  }, MultiGradMode::kAny);
  backward({y1, y2}, {}, /*retainGraph=*/true);
  EXPECT_EQ(calls, 1);
  backward({y1, y2});
  EXPECT_EQ(calls, 2);
}

TEST(MultiGradHook, PostAccumulateSeesAccumulatedGradsAndHandleRemoves) {
  Tensor a = leaf({1});
  Tensor b = leaf({2});
  std::vector<float> got;
  auto handle = registerMultiPostAccumulateGradHook({a, b}, [&](const TensorList& grads) {
    got = {grads[0].item<float>(), grads[1].item<float>()};
  });
  backward(ops::sum(ops::mul(a, b)));
  backward(ops::sum(ops::mul(a, b)));  // accumulates into .grad: 2*b, 2*a
  EXPECT_EQ(got, (std::vector<float>{4, 2}));
  handle.remove();
  got.clear();
  backward(ops::sum(ops::mul(a, b)));
  EXPECT_TRUE(got.empty());
}

TEST(MultiGradHook, OnceRemovesItselfAfterFiring) {
  Tensor a = leaf({1});
  int calls = 0;
  registerMultiGradHook({a}, [&](const TensorList&) { ++calls; }, MultiGradMode::kAll, true);
  backward(ops::sum(ops::mul(a, Scalar(2.0))));
  backward(ops::sum(ops::mul(a, Scalar(2.0))));
  EXPECT_EQ(calls, 1);
}

TEST(MultiGradHook, RejectsEmptySetsAndTensorsWithoutGrad) {
  EXPECT_THROW(registerMultiGradHook({}, [](const TensorList&) {}), ValueError);
  EXPECT_THROW(registerMultiGradHook({fromVector<float>({1})}, [](const TensorList&) {}),
               ValueError);
}

// FSDP frees an unsharded parameter after forward and refills it before
// backward; the graph's saved handle must see the refilled values.
TEST(MultiGradHook, SavedTensorSeesStorageRefilledBeforeBackward) {
  Tensor w = leaf({2, 3});
  Tensor x = leaf({5, 7});
  Tensor loss = ops::sum(ops::mul(w, x));  // saves w for x's gradient
  const size_t bytes = w.storage()->nbytes();
  w.storage()->release();
  bool refilled = false;
  registerMultiGradHook({loss}, [&](const TensorList&) {
    w.storage()->reallocate(bytes);
    w.copy_(fromVector<float>({4, 6}));
    refilled = true;
  }, MultiGradMode::kAny);
  backward(loss);
  EXPECT_TRUE(refilled);
  EXPECT_EQ(x.grad().toVector<float>(), (std::vector<float>{4, 6}));
  EXPECT_EQ(w.grad().toVector<float>(), (std::vector<float>{5, 7}));
}

}  // namespace
}  // namespace distlab::autograd
