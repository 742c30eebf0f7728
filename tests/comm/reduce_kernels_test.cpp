// The vectorised float sums of reduce_kernels.cpp (Note [vectorised sums])
// against the element-by-element definition: bitwise equal for every length
// (whole blocks and the tail), source count, SUM/AVG/PREMUL_SUM, with `out`
// aliasing source 0 or not, and on NaN, infinities, signed zeros and
// subnormals (a lane must take exactly the scalar operations, in rank order).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/comm/reduce_kernels.hpp"

namespace distlab::testing {
namespace {

using namespace distlab::comm;

template <typename T>
rc::Gen<T> anyValue() {
  using L = std::numeric_limits<T>;
  return rc::gen::weightedOneOf<T>(
      {{6, rc::gen::arbitrary<T>()},
       {1, rc::gen::element<T>(L::quiet_NaN(), L::infinity(), -L::infinity(), T(0), -T(0),
                               L::denorm_min(), L::max(), L::lowest())}});
}

// The definition: acc = s0, acc += s1, ... in source order; AVG then / n.
template <typename T>
std::vector<T> elementwise(const std::vector<std::vector<T>>& srcs, size_t count, bool average) {
  std::vector<T> out(count);
  for (size_t i = 0; i < count; ++i) {
    T acc = srcs[0][i];
    for (size_t s = 1; s < srcs.size(); ++s) acc = acc + srcs[s][i];
    if (average) acc = acc / static_cast<T>(srcs.size());
    out[i] = acc;
  }
  return out;
}

// Bitwise, except that any NaN equals any NaN (which operand's payload a NaN
// sum carries is the hardware's choice, in either form).
template <typename T>
bool sameValues(const T* got, const std::vector<T>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) return false;
  }
  return true;
}

template <typename T>
void checkSums(DType dtype) {
  const int n = *rc::gen::inRange(1, 7);
  const size_t count = *rc::gen::inRange<size_t>(0, 100);
  const ReduceOp op = *rc::gen::element(ReduceOp(ReduceOp::kSum), ReduceOp(ReduceOp::kAvg),
                                        ReduceOp(ReduceOp::kPremulSum));
  const bool aliased = *rc::gen::arbitrary<bool>();
  std::vector<std::vector<T>> srcs;
  for (int s = 0; s < n; ++s) {
    srcs.push_back(*rc::gen::container<std::vector<T>>(count, anyValue<T>()));
  }
  const std::vector<T> want = elementwise(srcs, count, op.kind == ReduceOp::kAvg);

  std::vector<std::vector<T>> in = srcs;
  std::vector<const void*> ptrs;
  for (auto& v : in) ptrs.push_back(v.data());
  std::vector<T> separate(count);
  T* out = aliased ? in[0].data() : separate.data();
  reduceN(out, ptrs.data(), n, count, dtype, op);
  RC_ASSERT(sameValues(out, want));

  in = srcs;
  ptrs.clear();
  for (auto& v : in) ptrs.push_back(v.data());
  out = aliased ? in[0].data() : separate.data();
  std::vector<T> copy(count);
  reduceNAndCopy(out, copy.data(), ptrs.data(), n, count, dtype, op);
  RC_ASSERT(sameValues(out, want));
  RC_ASSERT(sameValues(copy.data(), want));
}

RC_GTEST_PROP(ReduceKernelsProperty, Float32SumsEqualTheElementwiseDefinition, ()) {
  checkSums<float>(DType::kFloat32);
}

RC_GTEST_PROP(ReduceKernelsProperty, Float64SumsEqualTheElementwiseDefinition, ()) {
  checkSums<double>(DType::kFloat64);
}

}  // namespace
}  // namespace distlab::testing
