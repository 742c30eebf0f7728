// The backward engine: accumulation, hooks, callbacks, retain_graph, grad mode,
// reachable leaves. Values are small integers/dyadic fractions: exact in float.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/autograd/autograd.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::autograd {
namespace {

Tensor leaf(std::vector<float> values) {
  Tensor t = fromVector(values);
  t.setRequiresGrad(true);
  return t;
}

std::vector<float> vals(const Tensor& t) { return t.toVector<float>(); }

TEST(Engine, AccumulatesAcrossBackwardCalls) {
  Tensor x = leaf({1, 2, 3});
  backward(ops::sum(ops::mul(x, x)));
  EXPECT_EQ(vals(x.grad()), (std::vector<float>{2, 4, 6}));
  backward(ops::sum(ops::mul(x, Scalar(3.0))));
  EXPECT_EQ(vals(x.grad()), (std::vector<float>{5, 7, 9}));
}

TEST(Engine, AccumulatesInPlaceIntoAnExistingGrad) {
  Tensor x = leaf({1, 2});
  Tensor bucket = zeros({4});
  Tensor view = bucket.narrow(0, 1, 2);  // gradient_as_bucket_view
  x.setGrad(view);
  backward(ops::sum(ops::mul(x, Scalar(2.0))));
  EXPECT_TRUE(x.grad().isSame(view));
  EXPECT_EQ(vals(bucket), (std::vector<float>{0, 2, 2, 0}));
}

TEST(Engine, FirstGradientIsNotAliasedWithCallerTensor) {
  Tensor x = leaf({1, 2});
  Tensor g = fromVector<float>({1, 1});
  backward(x, g);  // the root gradient flows straight into AccumulateGrad
  backward(x, g);
  EXPECT_EQ(vals(x.grad()), (std::vector<float>{2, 2}));
  EXPECT_EQ(vals(g), (std::vector<float>{1, 1}));
}

TEST(Engine, PassThroughGradientIsNotSharedBetweenLeaves) {
  Tensor a = leaf({1, 2});
  Tensor b = leaf({1, 2});
  backward(ops::sum(ops::add(a, b)));  // add's backward sends one tensor to both
  EXPECT_FALSE(a.grad().sharesStorageWith(b.grad()));
  backward(ops::sum(ops::mul(a, Scalar(2.0))));
  EXPECT_EQ(vals(a.grad()), (std::vector<float>{3, 3}));
  EXPECT_EQ(vals(b.grad()), (std::vector<float>{1, 1}));
}

TEST(Engine, FanOutSumsGradients) {
  Tensor x = leaf({2});
  Tensor y = ops::mul(x, x);               // 2x
  Tensor z = ops::add(ops::mul(y, x), y);  // x^3 + x^2 -> 3x^2 + 2x = 16
  backward(z);
  EXPECT_EQ(vals(x.grad()), (std::vector<float>{16}));
}

TEST(Engine, ImplicitGradOnlyForScalars) {
  Tensor x = leaf({1, 2});
  try {
    backward(ops::mul(x, Scalar(2.0)));
    FAIL() << "expected an error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("grad can be implicitly created only for scalar outputs"),
              std::string::npos);
  }
}

TEST(Engine, RequiresGradOnRoot) {
  Tensor x = fromVector<float>({1});
  EXPECT_THROW(backward(x), ValueError);
}

TEST(Engine, SecondBackwardWithoutRetainGraphThrows) {
  Tensor x = leaf({1, 2});
  Tensor loss = ops::sum(ops::mul(x, x));
  backward(loss);
  try {
    backward(loss);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Trying to backward through the graph a second time"),
              std::string::npos);
  }
}

TEST(Engine, RetainGraphAllowsSecondBackward) {
  Tensor x = leaf({1, 2});
  Tensor loss = ops::sum(ops::mul(x, x));
  backward(loss, Tensor(), /*retainGraph=*/true);
  backward(loss);
  EXPECT_EQ(vals(x.grad()), (std::vector<float>{4, 8}));
}

TEST(Engine, NoGradGuardStopsRecording) {
  Tensor x = leaf({1});
  {
    NoGradGuard guard;
    EXPECT_FALSE(GradMode::isEnabled());
    Tensor y = ops::mul(x, x);
    EXPECT_FALSE(y.requiresGrad());
    EXPECT_TRUE(y.isLeaf());
  }
  EXPECT_TRUE(GradMode::isEnabled());
  EXPECT_TRUE(ops::mul(x, x).requiresGrad());
}

TEST(Engine, GradModeIsThreadLocalAndOffInsideBackward) {
  Tensor x = leaf({1});
  bool modeInHook = true;
  auto h = registerHook(x, [&](const Tensor&) {
    modeInHook = GradMode::isEnabled();
    return Tensor();
  });
  backward(ops::sum(x));
  EXPECT_FALSE(modeInHook);
  EXPECT_TRUE(GradMode::isEnabled());
}

TEST(Hooks, TensorHookCanReplaceGradientAndBeRemoved) {
  Tensor x = leaf({1, 2});
  Tensor y = ops::mul(x, Scalar(3.0));
  auto handle = registerHook(y, [](const Tensor& g) { return g.mul(10.0); });
  backward(ops::sum(y), Tensor(), true);
  EXPECT_EQ(vals(x.grad()), (std::vector<float>{30, 30}));
  handle.remove();
  EXPECT_FALSE(handle.active());
  x.setGrad(Tensor());
  backward(ops::sum(y));
  EXPECT_EQ(vals(x.grad()), (std::vector<float>{3, 3}));
}

TEST(Hooks, LeafHookRunsBeforeAccumulation) {
  Tensor x = leaf({1});
  auto h = registerHook(x, [](const Tensor& g) { return g.mul(-1.0); });
  backward(ops::sum(ops::mul(x, Scalar(5.0))));
  EXPECT_EQ(vals(x.grad()), (std::vector<float>{-5}));
}

TEST(Hooks, PostAccumulateGradHookSeesAccumulatedGrad) {
  Tensor x = leaf({1, 2});
  std::vector<float> seen;
  int calls = 0;
  auto handle = registerPostAccumulateGradHook(x, [&](Tensor& p) {
    ++calls;
    EXPECT_TRUE(p.isSame(x));
    seen = vals(p.grad());
  });
  backward(ops::sum(ops::mul(x, Scalar(2.0))));
  backward(ops::sum(ops::mul(x, Scalar(2.0))));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(seen, (std::vector<float>{4, 4}));
  handle.remove();
  backward(ops::sum(x));
  EXPECT_EQ(calls, 2);
}

TEST(Hooks, PostAccumulateGradHookRejectsNonLeaf) {
  Tensor x = leaf({1});
  Tensor y = ops::mul(x, x);
  EXPECT_THROW(registerPostAccumulateGradHook(y, [](Tensor&) {}), ValueError);
  EXPECT_THROW(registerHook(fromVector<float>({1}), [](const Tensor& g) { return g; }), ValueError);
}

TEST(Hooks, RetainGradKeepsNonLeafGrad) {
  Tensor x = leaf({1, 2});
  Tensor y = ops::mul(x, Scalar(2.0));
  retainGrad(y);
  backward(ops::sum(ops::mul(y, y)));
  EXPECT_EQ(vals(y.grad()), (std::vector<float>{4, 8}));
}

TEST(Callbacks, QueuedCallbackRunsAfterAllNodes) {
  Tensor a = leaf({1});
  Tensor b = leaf({2});
  std::vector<std::string> order;
  auto ha = registerPostAccumulateGradHook(a, [&](Tensor&) {
    order.push_back("a");
    queueCallback([&] {
      order.push_back("final");
      queueCallback([&] { order.push_back("nested"); });
    });
  });
  auto hb = registerPostAccumulateGradHook(b, [&](Tensor&) { order.push_back("b"); });
  backward(ops::sum(ops::add(ops::mul(a, b), b)));
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[2], "final");
  EXPECT_EQ(order[3], "nested");
  EXPECT_FALSE(isBackwardRunning());
}

TEST(Callbacks, QueueOutsideBackwardThrows) {
  try {
    queueCallback([] {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "Final callbacks can only be installed during backward pass.");
  }
}

TEST(Engine, ParametersRunInReverseCreationOrder) {
  // Like a network: w1 used first, w2 later; backward reaches w2 first.
  Tensor w1 = leaf({1});
  Tensor w2 = leaf({1});
  std::vector<int> order;
  auto h1 = registerPostAccumulateGradHook(w1, [&](Tensor&) { order.push_back(1); });
  auto h2 = registerPostAccumulateGradHook(w2, [&](Tensor&) { order.push_back(2); });
  Tensor x = fromVector<float>({3});
  Tensor h = ops::mul(ops::mul(x, w1), w2);
  backward(ops::sum(h));
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
}

TEST(Reachable, FindsLeavesUsedByOutputs) {
  Tensor a = leaf({1});
  Tensor b = leaf({2});
  Tensor c = leaf({3});
  Tensor out1 = ops::mul(a, b);
  TensorList found = reachableLeaves({out1});
  ASSERT_EQ(found.size(), 2u);
  EXPECT_TRUE((found[0].isSame(a) && found[1].isSame(b)) ||
              (found[0].isSame(b) && found[1].isSame(a)));
  TensorList withLeaf = reachableLeaves({out1, c});
  EXPECT_EQ(withLeaf.size(), 3u);
  EXPECT_TRUE(reachableLeaves({fromVector<float>({1})}).empty());
}

TEST(Reachable, AccumulatorIsSharedAndReachable) {
  Tensor a = leaf({1});
  auto acc = gradAccumulator(a);
  Tensor y = ops::mul(a, Scalar(2.0));
  const Edge& e = y.autogradMeta()->gradFn->nextEdges()[0];
  EXPECT_EQ(e.function.get(), acc.get());
  EXPECT_EQ(acc->name(), "AccumulateGrad");
  EXPECT_THROW(gradAccumulator(y), ValueError);
  EXPECT_THROW(gradAccumulator(fromVector<float>({1})), ValueError);
}

TEST(Engine, ErrorInHookPropagatesAndDropsCallbacks) {
  Tensor a = leaf({1});
  bool ran = false;
  auto h = registerPostAccumulateGradHook(a, [&](Tensor&) {
    queueCallback([&] { ran = true; });
    throw ValueError("hook failed");
  });
  EXPECT_THROW(backward(ops::sum(a)), ValueError);
  EXPECT_FALSE(ran);
  EXPECT_FALSE(isBackwardRunning());
}

}  // namespace
}  // namespace distlab::autograd
