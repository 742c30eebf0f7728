// Module: FQNs, registration order, hooks, train/eval, zeroGrad, state dicts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/autograd/engine.hpp"
#include "runtime/autograd/ops.hpp"
#include "runtime/core/errors.hpp"
#include "runtime/nn/containers.hpp"
#include "runtime/nn/layers.hpp"
#include "runtime/nn/models/gpt.hpp"
#include "runtime/nn/models/mlp.hpp"
#include "runtime/nn/models/two_layer_net.hpp"

namespace distlab::nn {
namespace {

std::vector<std::string> names(const NamedTensors& list) {
  std::vector<std::string> out;
  for (const auto& [n, t] : list) out.push_back(n);
  return out;
}

TEST(Module, MlpParameterNamesFollowPyTorch) {
  Generator gen(0);
  Mlp mlp({8, 16, 2, 3}, gen);
  EXPECT_EQ(names(mlp.namedParameters()),
            (std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.2.weight",
                                      "layers.2.bias", "layers.4.weight", "layers.4.bias"}));
  EXPECT_EQ(mlp.parameters()[0].sizes(), (Shape{16, 8}));
  EXPECT_TRUE(mlp.parameters()[0].requiresGrad());
  EXPECT_EQ(names(mlp.namedParameters(false)).size(), 0u);
}

TEST(Module, TiedWeightsListedOnceButSavedUnderBothNames) {
  Generator gen(0);
  GptOptions o;
  o.tiedHead = true;
  o.nLayer = 1;
  Gpt gpt(o, gen);
  auto params = names(gpt.namedParameters());
  EXPECT_EQ(params.front(), "wte.weight");
  EXPECT_EQ(std::count(params.begin(), params.end(), "lm_head.weight"), 0);
  StateDict sd = gpt.stateDict();
  EXPECT_TRUE(sd.contains("lm_head.weight"));
  EXPECT_TRUE(sd.contains("h.0.attn.c_attn.weight"));
  EXPECT_TRUE(sd.contains("h.0.mlp.0.weight"));
  o.tiedHead = false;
  Gpt untied(o, gen);
  auto all = names(untied.namedParameters());
  EXPECT_EQ(all.back(), "lm_head.weight");
  EXPECT_EQ(all.size(), params.size() + 1);
}

TEST(Module, BuffersAndStateDictOrder) {
  Sequential seq;
  Generator gen(1);
  seq.push_back(std::make_shared<Linear>(2, 2, gen));
  seq.push_back(std::make_shared<BatchNorm1d>(2));
  EXPECT_EQ(names(seq.namedBuffers()),
            (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"}));
  EXPECT_EQ(seq.stateDict().keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                      "1.running_var", "1.num_batches_tracked"}));
}

TEST(Module, LoadStateDictCopiesAndReportsKeys) {
  Generator g1(1), g2(2);
  Linear a(3, 2, g1), b(3, 2, g2);
  b.loadStateDict(a.stateDict());
  EXPECT_TRUE(b.param("weight").equal(a.param("weight")));
  EXPECT_FALSE(b.param("weight").sharesStorageWith(a.param("weight")));

  StateDict partial;
  partial.insert("weight", a.param("weight"));
  partial.insert("extra", zeros({1}));
  try {
    b.loadStateDict(partial);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "
              "\"bias\". \n\tUnexpected key(s) in state_dict: \"extra\". ");
  }
  LoadStateDictResult r = b.loadStateDict(partial, /*strict=*/false);
  EXPECT_EQ(r.missingKeys, (std::vector<std::string>{"bias"}));
  EXPECT_EQ(r.unexpectedKeys, (std::vector<std::string>{"extra"}));

  StateDict wrong;
  wrong.insert("weight", zeros({2, 2}));
  wrong.insert("bias", zeros({2}));
  try {
    b.loadStateDict(wrong);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("size mismatch for weight: copying a param with shape "
                                         "[2, 2] from checkpoint, the shape in current model is "
                                         "[2, 3]."),
              std::string::npos);
  }
}

TEST(Module, ForwardHooksRunAroundForwardAndCanReplace) {
  Generator gen(0);
  Sequential seq;
  auto lin = std::make_shared<Linear>(2, 2, gen);
  seq.push_back(lin);
  seq.push_back(std::make_shared<ReLU>());
  std::vector<std::string> log;
  auto pre = lin->registerForwardPreHook([&](Module& m, const TensorList& in) {
    log.push_back("pre:" + m.typeName());
    EXPECT_EQ(in.size(), 1u);
    return std::optional<TensorList>();
  });
  auto post = seq.registerForwardHook(
      [&](Module& m, const TensorList&, const TensorList& out) -> std::optional<TensorList> {
        log.push_back("post:" + m.typeName());
        return TensorList{ops::mul(out[0], 0.0)};
      });
  auto first = seq.registerForwardPreHook(
      [&](Module&, const TensorList&) {
        log.push_back("first");
        return std::optional<TensorList>();
      },
      /*prepend=*/true);
  Tensor y = seq.forward(ones({1, 2}));
  EXPECT_EQ(log, (std::vector<std::string>{"first", "pre:Linear", "post:Sequential"}));
  EXPECT_EQ(y.toVector<float>(), (std::vector<float>{0, 0}));
  pre.remove();
  post.remove();
  first.remove();
  log.clear();
  seq.forward(ones({1, 2}));
  EXPECT_TRUE(log.empty());
}

TEST(Module, TwoOutputModelUsesCall) {
  Generator gen(0);
  TwoLinLayerNet net(gen);
  TensorList out = net.call({ones({4, 10})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].sizes(), (Shape{4, 10}));
  EXPECT_EQ(out[1].sizes(), (Shape{4, 1}));
  EXPECT_THROW(net.forward(ones({4, 10})), ValueError);
  EXPECT_EQ(names(net.namedParameters()), (std::vector<std::string>{"a.weight", "b.weight"}));
  // loss from output[1] only: a.weight is not reachable (unused).
  TensorList used = autograd::reachableLeaves({out[1]});
  ASSERT_EQ(used.size(), 1u);
  EXPECT_TRUE(used[0].isSame(net.child("b")->param("weight")));
}

TEST(Module, TrainEvalAndZeroGrad) {
  Generator gen(0);
  Mlp mlp({4, 4, 1, 2}, gen);
  EXPECT_TRUE(mlp.isTraining());
  mlp.eval();
  EXPECT_FALSE(mlp.layers()->isTraining());
  EXPECT_FALSE((*mlp.layers())[0]->isTraining());
  mlp.train();
  EXPECT_TRUE((*mlp.layers())[1]->isTraining());
  autograd::backward(ops::sum(mlp.forward(ones({2, 4}))));
  Tensor w = mlp.parameters()[0];
  ASSERT_TRUE(w.grad().defined());
  mlp.zeroGrad(/*setToNone=*/false);
  EXPECT_TRUE(w.grad().equal(zeros(w.sizes())));
  mlp.zeroGrad();
  EXPECT_FALSE(w.grad().defined());
}

TEST(Module, RegistrationErrors) {
  Generator gen(0);
  Linear lin(2, 2, gen);
  EXPECT_THROW(lin.registerParameter("weight", zeros({1})), ValueError);
  EXPECT_THROW(lin.registerBuffer("a.b", zeros({1})), ValueError);
  EXPECT_THROW(lin.param("nope"), ValueError);
  EXPECT_THROW(lin.call({}), ValueError);
}

TEST(Module, SetParameterSwapsTheTensorUsedByForward) {
  Generator gen(0);
  Linear lin(2, 1, gen, /*bias=*/false);
  lin.setParameter("weight", fromVector<float>({2, 3}, {1, 2}));
  EXPECT_EQ(lin.forward(ones({1, 2})).toVector<float>(), (std::vector<float>{5}));
}

}  // namespace
}  // namespace distlab::nn
