// The meta device: every tensor operation runs shape-only and gives the
// shape and dtype the CPU gives for the same inputs.
#include <functional>

#include "runtime/tensor/dispatch.hpp"
#include "tests/tensor/test_util.hpp"

namespace distlab {
namespace {

// A CPU tensor of `shape` and `dtype` with small values, and its meta twin.
struct Pair {
  Tensor cpu;
  Tensor meta;
};

Pair pairOf(const Shape& shape, DType dtype = DType::kFloat32) {
  Generator gen(1);
  Tensor cpu = uniform(shape, 0.5, 2.0, gen).to(dtype);
  return {cpu, cpu.to(Device::meta())};
}

void expectSameMeta(const char* what, const Tensor& cpu, const Tensor& meta) {
  SCOPED_TRACE(what);
  EXPECT_TRUE(meta.device().isMeta());
  EXPECT_EQ(meta.sizes(), cpu.sizes());
  EXPECT_EQ(meta.dtype(), cpu.dtype());
  EXPECT_EQ(meta.isContiguous(), cpu.isContiguous());
}

using Unary = std::function<Tensor(const Tensor&)>;
using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

TEST(Meta, UnaryOperationsMatchCpuShapesAndDtypes) {
  const std::vector<std::pair<const char*, Unary>> ops = {
      {"neg", [](const Tensor& t) { return t.neg(); }},
      {"exp", [](const Tensor& t) { return t.exp(); }},
      {"relu", [](const Tensor& t) { return t.relu(); }},
      {"gelu", [](const Tensor& t) { return t.gelu(); }},
      {"pow", [](const Tensor& t) { return t.pow(3); }},
      {"clamp", [](const Tensor& t) { return t.clamp(0.7, 1.5); }},
      {"add scalar", [](const Tensor& t) { return t.add(2.5); }},
      {"gt scalar", [](const Tensor& t) { return t.gt(1.0); }},
      {"sum dims", [](const Tensor& t) { return t.sum({1}, true); }},
      {"mean", [](const Tensor& t) { return t.mean({0, 2}); }},
      {"norm", [](const Tensor& t) { return t.norm(2.0, {2}); }},
      {"var", [](const Tensor& t) { return t.var({1}); }},
      {"amax", [](const Tensor& t) { return t.amax({0}); }},
      {"argmax", [](const Tensor& t) { return t.argmax(2, true); }},
      {"max dim values", [](const Tensor& t) { return t.max(1).first; }},
      {"max dim indices", [](const Tensor& t) { return t.max(1).second; }},
      {"softmax", [](const Tensor& t) { return t.softmax(-1); }},
      {"logSoftmax", [](const Tensor& t) { return t.logSoftmax(1); }},
      {"transpose contiguous", [](const Tensor& t) { return t.transpose(0, 2).contiguous(); }},
      {"reshape", [](const Tensor& t) { return t.transpose(0, 1).reshape({-1}); }},
      {"narrow", [](const Tensor& t) { return t.narrow(1, 1, 2); }},
      {"to float64", [](const Tensor& t) { return t.to(DType::kFloat64); }},
      {"index select", [](const Tensor& t) { return t.indexSelect(1, arange(2)); }},
      {"cat", [](const Tensor& t) { return cat({t, t}, 2); }},
      {"stack", [](const Tensor& t) { return stack({t, t}, 1); }},
      {"matmul", [](const Tensor& t) { return t.matmul(t.transpose(1, 2)); }},
      {"clone", [](const Tensor& t) { return t.clone(); }},
  };
  const Pair p = pairOf({2, 3, 4});
  for (const auto& [name, op] : ops) {
    const Tensor index = arange(2);
    Tensor meta;
    if (std::string(name) == "index select") {
      meta = p.meta.indexSelect(1, index.to(Device::meta()));
    } else {
      meta = op(p.meta);
    }
    expectSameMeta(name, op(p.cpu), meta);
  }
}

TEST(Meta, BinaryOperationsBroadcastAndPromoteLikeCpu) {
  const std::vector<std::pair<const char*, Binary>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return a.add(b, 2); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a.sub(b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a.mul(b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return a.div(b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); }},
      {"eq", [](const Tensor& a, const Tensor& b) { return a.eq(b); }},
      {"le", [](const Tensor& a, const Tensor& b) { return a.le(b); }},
  };
  const Pair a = pairOf({4, 1, 3});
  const Pair b = pairOf({2, 3}, DType::kFloat64);
  const Pair i = pairOf({3}, DType::kInt64);
  for (const auto& [name, op] : ops) {
    expectSameMeta(name, op(a.cpu, b.cpu), op(a.meta, b.meta));
    expectSameMeta(name, op(i.cpu, a.cpu), op(i.meta, a.meta));
  }
  EXPECT_THROW_MSG(a.meta.add(pairOf({5}).meta), Error, "cannot be broadcast");
}

TEST(Meta, InPlaceAndIndexingOperationsKeepShapeAndCheckArguments) {
  Pair p = pairOf({3, 4});
  const Pair q = pairOf({4});
  Tensor m = p.meta;
  EXPECT_TRUE(m.add_(q.meta).isSame(m));
  m.mul_(2.0).clamp_(0.0, 1.0).addcmul_(q.meta, q.meta, 0.5).lerp_(q.meta, 0.3).zero_();
  m.maskedFill_(q.meta.gt(1.0), 0.0);
  EXPECT_EQ(m.sizes(), (Shape{3, 4}));
  EXPECT_THROW_MSG(m.add_(pairOf({2, 4}).meta), Error, "add_: shapes [3, 4] and [2, 4] cannot be broadcast");
  const Tensor idx = fromVector<int64_t>({0, 2, 1}, {3, 1}).to(Device::meta());
  expectSameMeta("gather", p.cpu.gather(1, fromVector<int64_t>({0, 2, 1}, {3, 1})),
                 p.meta.gather(1, idx));
  Tensor acc = zeros({3, 4}, TensorOptions{}.withDevice(Device::meta()));
  acc.scatterAdd_(1, idx, pairOf({3, 1}).meta);
  acc.indexAdd_(0, arange(3).to(Device::meta()), p.meta);
  EXPECT_THROW_MSG(acc.indexAdd_(0, arange(2).to(Device::meta()), p.meta), ValueError,
                   "indexAdd_: source shape [3, 4] does not match the expected [2, 4]");
  EXPECT_THROW_MSG(p.meta.gather(1, idx.to(DType::kFloat32)), ValueError,
                   "expected an int64 index tensor");
  EXPECT_THROW_MSG(p.meta.mm(pairOf({3, 4}).meta), Error, "cannot be multiplied (4 != 3)");
}

TEST(Meta, LargeTensorsCostNoMemory) {
  // 2^40 float32 elements (4 TiB) exist on meta and go through a matmul.
  const TensorOptions opts{DType::kFloat32, Device::meta()};
  Tensor w = empty({1 << 20, 1 << 20}, opts);
  Tensor x = empty({8, 1 << 20}, opts);
  Tensor y = x.matmul(w.t()).relu().sum({1});
  EXPECT_EQ(y.sizes(), (Shape{8}));
  EXPECT_EQ(w.storage()->nbytes(), size_t{1} << 42);
}

}  // namespace
}  // namespace distlab
